import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import VoiceboxCore
import XCTest

/// The Spiel provider under callers that misbehave: wrong descriptors and arguments, readers that
/// close or never read. Each is refused before anything is written, or costs only the caller.
final class SpielHostileTests: XCTestCase {
    static let voice = SpielClient.voice
    static let long = String(repeating: Texts.long + " ", count: 6)
    static let spares = ServiceProcesses.spareModules

    func startProvider(stderrFD: Int32? = nil, extraArguments: [String] = []) async throws -> (ServiceHarness, SpielClient) {
        let stack = try Stack.require()
        let service = try await startService(on: stack, extraArguments: extraArguments, stderrFD: stderrFD)
        try await service.waitForProvider()
        return (service, SpielClient(connection: service.client))
    }

    /// The output modules voiceboxd runs now (its children that became sd_espeak-ng).
    static func modules(of daemon: pid_t) -> [pid_t] { ServiceProcesses.modules(of: daemon) }

    /// Refused with a D-Bus error, and nothing written: a descriptor that is no pipe, the read end
    /// of one, too much text, SSML Speak refuses, an unknown voice, a bad language tag.
    func testBadArgumentsAreRefusedBeforeAnythingIsWritten() async throws {
        let (_, spiel) = try await startProvider()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-spiel-\(UUID().uuidString)").path
        let file = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(file); unlink(path) }
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        defer { close(ends[0]); close(ends[1]) }
        let name = SpeechProvider.busName
        var errors: [String?] = []
        errors.append(await spiel.synthesizeError(name, fd: file, voice: Self.voice))
        errors.append(await spiel.synthesizeError(name, fd: ends[0], voice: Self.voice))
        errors.append(await spiel.synthesizeError(name, fd: ends[1], text: String(repeating: "a", count: 70_000), voice: Self.voice))
        errors.append(await spiel.synthesizeError(name, fd: ends[1], text: "<speak><mark name=\"__spd_x\"/>x</speak>", voice: Self.voice,
                                                  ssml: true))
        errors.append(await spiel.synthesizeError(name, fd: ends[1], text: "<speak>unclosed", voice: Self.voice, ssml: true))
        errors.append(await spiel.synthesizeError(name, fd: ends[1], voice: "espeak-ng/No Such Voice"))
        errors.append(await spiel.synthesizeError(name, fd: ends[1], voice: Self.voice, language: "not a tag"))
        XCTAssertEqual(errors, ["InvalidArgument", "InvalidArgument", "TooLarge", "InvalidArgument", "InvalidArgument",
                                "UnknownVoice", "InvalidArgument"].map { "org.voicebox.Error." + $0 })
        var waiting: Int32 = -1
        XCTAssertEqual(ioctl(ends[0], UInt(FIONREAD), &waiting), 0)
        XCTAssertEqual(waiting, 0, "something was written into the pipe")
        XCTAssertEqual(lseek(file, 0, SEEK_END), 0, "something was written into the file")
    }

    /// A reader that closes its end is a cancel: the module rendering for it goes at once, nothing
    /// is logged, and the next utterance is whole. One already closed when Synthesize comes too.
    func testAReaderThatClosesIsACancelThatLeavesNothingBehind() async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-spiel-log-\(UUID().uuidString)").path
        let logFD = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(logFD); unlink(log) }
        let (service, spiel) = try await startProvider(stderrFD: logFD)
        let daemon = service.daemon.pid
        try await waitUntil("the spare modules") { Self.modules(of: daemon).count >= Self.spares }
        let spares = Self.spares
        let fd = try await spiel.synthesize(SpeechProvider.busName, text: Self.long, voice: Self.voice)
        var header = [UInt8](repeating: 0, count: 4)
        XCTAssertEqual(read(fd, &header, 4), 4)
        try await waitUntil("a module rendering") { Self.modules(of: daemon).count > spares }
        close(fd)
        try await waitUntil("the rendering's module to go") { Self.modules(of: daemon).count <= spares }
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        close(ends[0])
        let closed = await spiel.synthesizeError(SpeechProvider.busName, fd: ends[1], voice: Self.voice)
        close(ends[1])
        XCTAssertNil(closed, "a reader gone before the call is a cancel too, not an error")
        let next = try await spiel.synthesize(SpeechProvider.busName, text: "Still here.", voice: Self.voice)
        let stream = SpielStreamContents.parse(try await readAll(next))
        close(next)
        SpeechAudio(rate: 22050, samples: SpeechAudio.samples(stream.audio[...])).assertMatches(try SpeechAudio.espeak("Still here."), "after")
        try await waitUntil("every module of those renderings to go") { Self.modules(of: daemon).count <= spares }
        let logged = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        XCTAssertEqual(logged.split(separator: "\n").filter { !$0.contains("serving") }, [], "logged: \(logged)")
    }

    /// A caller that queues eight utterances and reads none holds its own pipes' worth of audio
    /// (at most what a pipe holds) and at most four modules; another caller is served meanwhile,
    /// whole; and when the first leaves the bus, its renderings go.
    func testAReaderThatNeverReadsHoldsUpNoOtherCaller() async throws {
        let (service, spiel) = try await startProvider()
        let daemon = service.daemon.pid
        let stuck = try BusConnection(address: service.stack.busAddress)
        let stuckClient = SpielClient(connection: stuck)
        var unread: [Int32] = []
        for _ in 0..<8 { unread.append(try await stuckClient.synthesize(SpeechProvider.busName, text: Self.long, voice: Self.voice)) }
        defer { for fd in unread { close(fd) } }
        // Full: what waits in the first pipe stops growing (the writer waits for room).
        var last: Int32 = -1, since = ContinuousClock.now
        try await waitUntil("the first pipe to fill") {
            var waiting: Int32 = 0
            _ = ioctl(unread[0], UInt(FIONREAD), &waiting)
            if waiting != last { (last, since) = (waiting, .now) }
            return waiting > 16_384 && ContinuousClock.now - since > .milliseconds(500)
        }
        let text = "Another caller is not held up."
        let fd = try await spiel.synthesize(SpeechProvider.busName, text: text, voice: Self.voice)
        let stream = SpielStreamContents.parse(try await readAll(fd, timeout: .seconds(30)))
        close(fd)
        SpeechAudio(rate: 22050, samples: SpeechAudio.samples(stream.audio[...])).assertMatches(try SpeechAudio.espeak(text), "other caller")
        for pipe in unread {
            var waiting: Int32 = 0
            XCTAssertEqual(ioctl(pipe, UInt(FIONREAD), &waiting), 0)
            XCTAssertLessThanOrEqual(waiting, 65_536, "more than a pipe holds")
        }
        XCTAssertLessThanOrEqual(Self.modules(of: daemon).count, 4 + Self.spares, "the stuck caller holds more than its four (and the spares)")
        await stuck.close()
        try await waitUntil("the stuck caller's renderings to go") { Self.modules(of: daemon).count <= Self.spares }
    }

    /// Five callers each queue four utterances and read none: more than the service's 16 engines.
    /// Each utterance is rendered into memory and its engine given back, so the stuck callers hold
    /// their own buffers, no module, and another caller is served whole. (A red-team pass: four such
    /// callers took every engine, and everyone else's Synthesize waited for ever.)
    func testCallersThatNeverReadHoldTheirBuffersNotTheEngines() async throws {
        let (service, spiel) = try await startProvider()
        let daemon = service.daemon.pid
        var stuck: [BusConnection] = [], unread: [Int32] = []
        defer { for fd in unread { close(fd) } }
        for _ in 0..<5 {
            let connection = try BusConnection(address: service.stack.busAddress)
            stuck.append(connection)
            let client = SpielClient(connection: connection)
            for _ in 0..<4 { unread.append(try await client.synthesize(SpeechProvider.busName, text: Texts.long, voice: Self.voice)) }
        }
        try await waitUntil("every stuck rendering's engine given back", timeout: .seconds(60)) {
            Self.modules(of: daemon).count <= Self.spares
        }
        let text = "Another caller is not held up."
        let fd = try await spiel.synthesize(SpeechProvider.busName, text: text, voice: Self.voice)
        let stream = SpielStreamContents.parse(try await readAll(fd, timeout: .seconds(30)))
        close(fd)
        SpeechAudio(rate: 22050, samples: SpeechAudio.samples(stream.audio[...])).assertMatches(try SpeechAudio.espeak(text), "other caller")
        // What a stuck caller gets when it reads at last: all of it.
        let lastUnread = unread.removeLast()
        let late = SpielStreamContents.parse(try await readAll(lastUnread, timeout: .seconds(30)))
        close(lastUnread)
        SpeechAudio(rate: 22050, samples: SpeechAudio.samples(late.audio[...])).assertMatches(try SpeechAudio.espeak(Texts.long), "read late")
        for connection in stuck { await connection.close() }
    }

    /// Utterances too long to read ahead (3 min of audio each, over the 4 MiB): sixteen of them
    /// for four callers that never read hold every module, until the bound module-reader (made
    /// 2 s here) ends each; then another caller is served whole, and the stuck readers find their
    /// streams ended. (A second red-team pass: such callers held every module with no bound.)
    func testAReaderThatNeverReadsALongUtteranceHoldsItsModuleOnlyUntilItsBound() async throws {
        let (service, spiel) = try await startProvider(extraArguments: ["--bound", "module-reader=2"])
        let daemon = service.daemon.pid
        let longer = String(repeating: Texts.long + " ", count: 20)
        var stuck: [BusConnection] = [], unread: [Int32] = []
        defer { for fd in unread { close(fd) } }
        for _ in 0..<4 {
            let connection = try BusConnection(address: service.stack.busAddress)
            stuck.append(connection)
            let client = SpielClient(connection: connection)
            for _ in 0..<4 { unread.append(try await client.synthesize(SpeechProvider.busName, text: longer, voice: Self.voice)) }
        }
        let text = "Another caller is not held up."
        let fd = try await spiel.synthesize(SpeechProvider.busName, text: text, voice: Self.voice)
        let stream = SpielStreamContents.parse(try await readAll(fd, timeout: .seconds(120)))
        close(fd)
        SpeechAudio(rate: 22050, samples: SpeechAudio.samples(stream.audio[...])).assertMatches(try SpeechAudio.espeak(text), "other caller")
        try await waitUntil("the stuck renderings' modules to go", timeout: .seconds(60)) { Self.modules(of: daemon).count <= Self.spares }
        let first = unread.removeFirst()
        defer { close(first) }
        let cut = try await readAll(first, timeout: .seconds(30))
        XCTAssertLessThan(cut.count, 6 << 20, "the stuck stream was not ended: \(cut.count) bytes")
        for connection in stuck { await connection.close() }
    }

    /// Modules die with the service: killed with SIGKILL (no clean-up of its own), voiceboxd leaves
    /// neither the spare nor a module in the middle of an utterance behind. (Their pipes close with
    /// it too; the parent-death signal is for a module busy elsewhere, which no test can make.)
    func testNoModuleOutlivesTheService() async throws {
        let (service, spiel) = try await startProvider()
        let daemon = service.daemon.pid
        let fd = try await spiel.synthesize(SpeechProvider.busName, text: Self.long, voice: Self.voice)
        defer { close(fd) }
        try await waitUntil("a module rendering beside the spares") { Self.modules(of: daemon).count > Self.spares }
        let modules = Self.modules(of: daemon)
        service.daemon.signal(SIGKILL)
        try await waitUntil("every module to go with voiceboxd") {
            modules.allSatisfy { pid in
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
                return stat.split(separator: ")").last?.split(separator: " ").first == "Z"  // dead, not yet reaped
            }
        }
    }

    /// Written speech needs no speech-dispatcher: with none to reach, played speech fails with
    /// EngineUnavailable, and speech written with the default voice is written all the same.
    func testWithoutSpeechDispatcherSpeechIsStillWritten() async throws {
        let stack = try Stack.require()
        let alone = try await startService(on: stack, speechdAddress: "unix_socket:/nonexistent/speechd.sock")
        let played = await alone.errorName("Speak", [.string("Heard by nobody."), .vardict([:])])
        XCTAssertEqual(played, "org.voicebox.Error.EngineUnavailable")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-alone-\(UUID().uuidString).wav").path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(fd); unlink(path) }
        let id = try await alone.speak("Written without speech-dispatcher.", ["output": .unixFD(fd), "wait": .boolean(true)])
        XCTAssertEqual(alone.events(of: id).last, "SpeechFinished:done")
        let wav = try SpeechAudio.wav(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        XCTAssertGreaterThan(wav.audio.seconds, 1)
    }
}
