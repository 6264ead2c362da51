import Foundation
import Glibc

/// dbus-monitor watching AudioInterruption from the owner of org.voicebox.Speech1, as a user's
/// `busctl --user monitor org.voicebox.Speech1` would: a signal sent while the sender does not own
/// the name (before it took it, after it released it) is not seen.
final class BusMonitor: Sendable {
    /// One signal as dbus-monitor printed it: its state ("began", "ended") and its info's entries,
    /// each as dbus-monitor shows the value ("string \"speaking\"", "boolean true", "uint32 1").
    struct Interruption: Sendable {
        var state: String
        var info: [String: String]
    }

    private let process: Subprocess
    private let text = Shared<String>("")

    init(busAddress: String) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        process = try Subprocess("/usr/bin/dbus-monitor", [
            "--address", busAddress,
            "type='signal',sender='org.voicebox.Speech1',interface='org.voicebox.Speech1',member='AudioInterruption'",
        ], stdoutFD: fds[1])
        close(fds[1])
        let readFD = fds[0], text = text
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                let chunk = String(decoding: buffer[0..<count], as: UTF8.self)
                text.withLock { $0 += chunk }
            }
            close(readFD)
        }
    }

    /// Waits until dbus-monitor is watching (it prints the bus's NameAcquired first).
    func waitUntilWatching() async throws {
        try await waitUntil("dbus-monitor to start") { self.text.value.contains("NameAcquired") || self.text.value.contains("signal") }
    }

    /// The signals dbus-monitor has printed whole: a block counts once its info's closing bracket
    /// (the outer array's, at three spaces) has come, since the text arrives in pieces.
    var interruptions: [Interruption] {
        let blocks = text.value.components(separatedBy: "\nsignal ").dropFirst()
            .filter { $0.contains("member=AudioInterruption") && $0.contains("\n   ]") }
        return blocks.map { block in
            let lines = block.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            let state = lines.first { $0.hasPrefix("string \"") }.map { String($0.dropFirst(8).dropLast()) } ?? ""
            var info: [String: String] = [:]
            for (index, line) in lines.enumerated() where line.hasPrefix("dict entry(") && index + 2 < lines.count {
                let key = lines[index + 1]
                guard key.hasPrefix("string \"") else { continue }
                let value = lines[index + 2].replacingOccurrences(of: "variant", with: "").trimmingCharacters(in: .whitespaces)
                info[String(key.dropFirst(8).dropLast())] = value
            }
            return Interruption(state: state, info: info)
        }
    }

    func waitFor(_ state: String, count: Int = 1, timeout: Duration = .seconds(10)) async throws -> Interruption {
        try await waitUntil("dbus-monitor to see AudioInterruption \(state) #\(count)", timeout: timeout) {
            self.interruptions.filter { $0.state == state }.count >= count
        }
        return interruptions.filter { $0.state == state }[count - 1]
    }

    func stop() {
        process.signal(SIGTERM)
    }

    deinit { process.signal(SIGKILL) }
}
