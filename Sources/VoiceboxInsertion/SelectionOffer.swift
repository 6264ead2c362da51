import Foundation
import VoiceboxSpawn

/// The text offered for one paste by a program that exits when it has been pasted once (xclip
/// `-loops 1`, `wl-copy --paste-once`): its exit confirms that the window took the paste; no exit
/// within the wait means the keystroke pasted nothing (a terminal's Ctrl+V, a window that
/// ignores it), and that is reported instead of success.
final class SelectionOffer {
    private let child: Child
    /// Its standard output and error (xclip's message may come on either).
    private var outputs: [Int32]

    /// Starts the offer and returns once it holds the selection.
    init(_ kind: ClipboardKind, _ selection: Selection, text: String) throws(InsertionError) {
        let program = kind == .xclip ? "xclip" : "wl-copy"
        let path = try Programs.find(program, for: Clipboard.purpose(kind))
        if kind == .wlClipboard {
            // Emptied first, so that the offer is seen to be there once the selection has types again.
            try Programs.run("wl-copy", for: Clipboard.purpose(kind), (selection == .primary ? ["--primary"] : []) + ["--clear"])
        }
        let arguments = kind == .xclip
            ? ["-selection", selection.rawValue, "-i", "-quiet", "-loops", "1", "-t", Clipboard.textType(kind)]
            : (selection == .primary ? ["--primary"] : []) + ["--foreground", "--paste-once", "--type", Clipboard.textType(kind)]
        var spec = ChildSpec(path, arguments)
        spec.standardInput = .pipe
        spec.standardOutput = .pipe
        spec.standardError = .pipe
        let started: Spawn.Started
        do {
            started = try Spawn.start(spec)
        } catch {
            throw .failed("cannot run \(path): \(error)")
        }
        child = started.child
        outputs = [started.output, started.error].compactMap { $0 }
        if let input = started.input {
            let bytes = Array(text.utf8)
            var written = 0
            while written < bytes.count {
                let count = Spawn.writeWithoutSIGPIPE(input, bytes[written...])
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                written += count
            }
            close(input)
        }
        for fd in outputs { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        let ready = kind == .xclip ? waitForMessage("Waiting", within: .seconds(3))
                                   : waitForTypes(selection, within: .seconds(3))
        guard ready else {
            let said = finish()
            throw .failed("\(program) could not take the \(selection.rawValue) selection" + (said.isEmpty ? "" : ": \(said)"))
        }
    }

    deinit {
        _ = finish()
    }

    /// Whether it has been pasted (the program exited by itself, successfully) within `timeout`.
    func waitForPaste(within timeout: Duration) -> Bool {
        let ended = child.wait(timeout: timeout)
        _ = finish()
        return ended == .exited(0)
    }

    /// Ends it (if still there); what it said.
    private func finish() -> String {
        let said = String(decoding: read(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        for fd in outputs { close(fd) }
        outputs = []
        if child.termination == nil {
            child.signal(SIGTERM)
            _ = child.end(within: .seconds(1))
        }
        return said
    }

    private func read() -> [UInt8] {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        for fd in outputs {
            while true {
                let count = Glibc.read(fd, &chunk, chunk.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                data.append(contentsOf: chunk[0..<count])
            }
        }
        return data
    }

    /// xclip says "Waiting for one selection request" once it owns the selection.
    private func waitForMessage(_ message: String, within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        var seen: [UInt8] = []
        while ContinuousClock.now < deadline {
            var entries = outputs.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&entries, nfds_t(entries.count), 50)
            seen += read()
            if String(decoding: seen, as: UTF8.self).contains(message) { return true }
            if child.termination != nil { return false }
        }
        return false
    }

    /// wl-copy says nothing: the selection, emptied before, offers types again once it is there.
    private func waitForTypes(_ selection: Selection, within timeout: Duration) -> Bool {
        guard let paste = Programs.lookUp("wl-paste") else { return false }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let listing = try? ChildProcess.run(paste, (selection == .primary ? ["--primary"] : []) + ["--list-types"],
                                                captureOutput: true, timeout: .seconds(2))
            if let listing, listing.status == 0, !listing.output.isEmpty { return true }
            if child.termination != nil { return false }
            usleep(10_000)
        }
        return false
    }
}
