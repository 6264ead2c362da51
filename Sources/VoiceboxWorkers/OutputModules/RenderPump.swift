import Glibc
import VoiceboxCore
import VoiceboxSpawn
import VoiceboxThreads

/// What all renderings hold read ahead of their readers, bounded in all: past `limit` a rendering
/// reads its module no further ahead than its reader takes (it keeps its module meanwhile), so that
/// many callers that never read cannot make voiceboxd's memory grow without end.
final class ReadAheadBudget: Sendable {
    /// 64 utterances' worth of RenderPump.bufferBytes.
    static let standardLimit = 256 << 20

    let limit: Int
    private let held = Locked(0)

    init(limit: Int = ReadAheadBudget.standardLimit) { self.limit = limit }

    var hasRoom: Bool { held.withLock { $0 < limit } }
    func adjust(by bytes: Int) { held.withLock { $0 += bytes } }
}

/// A rendering's handle: a pipe whose read end its thread watches, so that a cancel wakes it
/// wherever it waits (for the module, or for room in the reader's pipe).
final class ModuleRendering: RenderHandle {
    private let wake: Locked<(read: Int32, write: Int32)?>

    init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, O_NONBLOCK)
            }
            wake = Locked((ends[0], ends[1]))
        } else {
            wake = Locked(nil)  // no descriptors left: the rendering fails at once (`readEnd` is -1)
        }
    }

    var readEnd: Int32 { wake.withLock { $0?.read ?? -1 } }

    func cancel() {
        wake.withLock { ends in
            guard let ends else { return }
            var one: UInt8 = 1
            _ = write(ends.write, &one, 1)  // a full pipe is awake already
        }
    }

    /// At the end of the rendering; a later cancel does nothing.
    func close() {
        wake.withLock { ends in
            if let ends {
                Glibc.close(ends.read)
                Glibc.close(ends.write)
            }
            ends = nil
        }
    }

    deinit { close() }
}

/// The loop of one rendering, on a thread of its own: it sets the module up for the utterance, then
/// moves its audio into the reader's descriptor as fast as the reader takes it, waiting in poll(2)
/// for the module (at most the bound module-silence between pieces), for room in the reader's pipe (as
/// long as the reader takes), or for a cancel. While the reader is slow, the module's audio is
/// read ahead into memory, up to `bufferBytes`: an utterance that fits is rendered whole, and the
/// module is given back at its end (`release`) however slowly it is read, so that a reader that
/// never reads holds its own buffer, not an engine another caller waits for. Past `bufferBytes` the
/// module waits for the reader (the pipe is the flow control, and memory stays bounded).
struct RenderPump {
    /// About 95 s of espeak-ng's 22,050 Hz mono audio.
    static let bufferBytes = 4 << 20

    let module: ModuleProcess
    let request: RenderRequest
    let engine: RenderEngine
    let target: RenderTarget
    let wake: Int32
    let defaultLanguage: String
    let events: @Sendable (RenderEvent) -> Void
    /// The module has sent the utterance's end: it is given back (once).
    let release: () -> Void
    let budget: ReadAheadBudget

    /// SET and SPEAK, sent at once (the module reads its input line by line: four round trips cost
    /// four turns of the scheduler on a loaded machine), each reply within the bound module-reply.
    func start() throws(ModuleFailure) {
        let language = request.language.flatMap { $0.isEmpty ? nil : $0 } ?? defaultLanguage
        let settings = ["pitch=\(request.pitch)", "pitch_range=0", "rate=\(module.module.rateScale.moduleRate(request.rate))",
                        "volume=\(request.volume)", "voice=male1", "language=\(language)",
                        "synthesis_voice=\(request.voiceName ?? "NULL")"]
        try module.send("SET\n" + settings.map { Self.line($0) }.joined() + ".\nSPEAK\n" + Self.line(request.markup.document) + ".\n")
        try module.expect(200..<300, "SET")
        try module.expect(200..<300, "the settings \(settings.joined(separator: " "))")
        try module.expect(200..<300, "SPEAK")
        try module.expect(200..<300, "the text")
    }

    /// One protocol line: nothing in it may end it early (the markup has no line breaks already).
    static func line(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 }) + "\n"
    }

    /// Runs to the end; the module is still to be dismissed, the descriptor to be closed.
    /// `written`: the bytes that went into the descriptor.
    func run() -> (end: RenderEnd, written: Int) {
        var written = 0
        let end = run(&written)
        return (end, written)
    }

    private func run(_ written: inout Int) -> RenderEnd {
        var stream = RenderedStream(encoding: target.encoding, markup: request.markup,
                                    format: (engine.sampleRate, engine.channels))
        var moduleDone = false
        var backlog = module.takeBacklog()
        let out = target.descriptor.fd
        var accounted = 0  // what this rendering counts in the budget
        defer { budget.adjust(by: -accounted) }
        func account() {
            budget.adjust(by: stream.buffered - accounted)
            accounted = stream.buffered
        }
        /// Takes what the module sent into the stream; at its END the module is given back.
        func takeBacklog() throws {
            while !backlog.isEmpty, !moduleDone {
                moduleDone = try take(backlog.removeFirst(), into: &stream)
                if moduleDone { release() }
            }
        }
        do {
            try takeBacklog()
            while true {
                for event in stream.dueNow() { events(event) }
                if let chunk = stream.next() {
                    // Written at once while there is room; while there is none, the module is read
                    // ahead (up to bufferBytes), and a cancel is seen.
                    let readAhead = { !moduleDone && stream.buffered < Self.bufferBytes && budget.hasRoom }
                    let end = try write(chunk, to: out, readAhead: readAhead, holdsModule: { !moduleDone }) {
                        backlog += try module.readAvailable()
                        try takeBacklog()
                        account()
                    }
                    if let end { return end }
                    for event in stream.wrote() { events(event) }
                    written = stream.written
                    account()
                } else if !moduleDone {
                    if backlog.isEmpty {
                        switch waitForModule(out) {
                        case .ready: backlog = try module.readAvailable()
                        case .ended(let end): return end
                        }
                    }
                    try takeBacklog()
                } else {
                    return .done
                }
            }
        } catch let failure as ModuleFailure {
            return .failed(failure.description)
        } catch {
            return .failed("\(error)")
        }
    }

    /// One item from the module; true at its END.
    private func take(_ item: ModuleOutput.Item, into stream: inout RenderedStream) throws -> Bool {
        switch item {
        case .audio(let rate, let channels, let samples):
            try stream.audio(samples, sampleRate: rate, channels: channels)
        case .mark(let name):
            stream.mark(named: name)
        case .event(702):
            stream.finish(defaultFormat: (engine.sampleRate, engine.channels))
            return true
        case .event(703):
            throw ModuleFailure(description: "\(module.module.name) stopped by itself")
        case .event:
            break  // BEGIN; PAUSE never comes unasked
        case .reply(let code, let lines):
            throw ModuleFailure(description: "\(module.module.name) sent '\(code) \(lines.joined(separator: " "))' while rendering")
        }
        return false
    }

    private enum Wait { case ready, ended(RenderEnd) }

    private enum RoomWait { case room, module, ended(RenderEnd) }

    /// Room in the reader's descriptor, or (`readAhead`) more from the module; ended by a cancel or
    /// the reader. At the reader's pace, except while the module is held for it with nothing more to
    /// read ahead (`holdsModule`): then within the bound module-reader, so that a reader that never
    /// reads holds no module for longer, however long its utterance.
    private func waitForRoom(_ out: Int32, readAhead: Bool, holdsModule: Bool) -> RoomWait {
        var entries = [pollfd(fd: out, events: Int16(POLLOUT), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: readAhead ? module.output : -1, events: Int16(POLLIN), revents: 0)]
        let bound = module.bounds[.moduleReader]
        let timeout: Int32 = holdsModule && !readAhead ? Child.milliseconds(bound) : -1
        var ready: Int32
        repeat { ready = poll(&entries, 3, timeout) } while ready < 0 && errno == EINTR
        if ready < 0 { return .ended(.failed("poll: \(String(cString: strerror(errno)))")) }
        if ready == 0 {
            return .ended(.failed("the reader took nothing for \(bound.inSeconds) s while the rest of its utterance held "
                                  + "\(module.module.name) (the audio read ahead for it was full)"))
        }
        if entries[1].revents != 0 { return .ended(.cancelled) }
        if entries[0].revents & Int16(POLLERR) != 0 { return .ended(.readerGone) }
        if entries[0].revents & Int16(POLLOUT) != 0 { return .room }
        if entries[2].revents != 0 { return .module }
        return .ended(.readerGone)  // POLLHUP or POLLNVAL on the reader's end
    }

    /// More from the module, within the bound module-silence; the reader leaving or a cancel end it.
    private func waitForModule(_ out: Int32) -> Wait {
        var entries = [pollfd(fd: module.output, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: out, events: 0, revents: 0)]
        let bound = module.bounds[.moduleSilence]
        var ready: Int32
        repeat { ready = poll(&entries, 3, Child.milliseconds(bound)) } while ready < 0 && errno == EINTR
        if ready < 0 { return .ended(.failed("poll: \(String(cString: strerror(errno)))")) }
        if ready == 0 {
            return .ended(.failed("\(module.module.name) sent nothing for \(bound.inSeconds) s while rendering"))
        }
        if entries[1].revents != 0 { return .ended(.cancelled) }
        if entries[2].revents & Int16(POLLERR | POLLHUP) != 0 { return .ended(.readerGone) }
        return .ready
    }

    /// Writes `chunk` whole: an x-spiel chunk into a pipe with one write(2) (atomic at its size);
    /// WAV or raw PCM, and anything into a file, in as many as it takes. nil when it is written.
    /// While the reader has no room, `readModule` runs whenever the module has more and `readAhead`.
    private func write(_ chunk: [UInt8], to out: Int32, readAhead: () -> Bool, holdsModule: () -> Bool,
                       readModule: () throws -> Void) throws -> RenderEnd? {
        var offset = 0
        while offset < chunk.count {
            let wrote = chunk[offset...].withUnsafeBytes { Glibc.write(out, $0.baseAddress, $0.count) }
            if wrote >= 0 {
                offset += wrote
                continue
            }
            switch errno {
            case EINTR: continue
            case EAGAIN:
                switch waitForRoom(out, readAhead: readAhead(), holdsModule: holdsModule()) {
                case .room: break
                case .module: try readModule()
                case .ended(let end): return end
                }
            case EPIPE: return .readerGone
            default: return .failed("cannot write the audio: \(String(cString: strerror(errno)))")
            }
        }
        return nil
    }
}
