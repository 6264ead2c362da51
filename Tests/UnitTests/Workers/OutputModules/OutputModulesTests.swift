import Foundation
import Glibc
import VoiceboxCore
import VoiceboxSpawn
import VoiceboxThreads
@testable import TestSupport
import XCTest
@testable import VoiceboxWorkers

/// speech-dispatcher's sd_espeak-ng run confined by voicebox-worker (no sound server needed): what
/// it renders is espeak-ng's own rendering, and its confinement holds what a module must not do.
final class OutputModulesTests: XCTestCase {
    private var workerPath: String { Checkout.buildDirectory + "/voicebox-worker" }

    private func requireModule() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/lib/speech-dispatcher-modules/sd_espeak-ng") else {
            throw XCTSkip("sd_espeak-ng is not installed (scripts/deps installs it)")
        }
    }

    /// A program run as a module (python3 here, as a module that did what a hostile text made it
    /// do would run) can read files and make threads; it cannot open a socket, write or create a
    /// file, fork, or signal another process; ptrace kills it; it runs at nice 10.
    func testTheModuleConfinementAllowsOnlyWhatAModuleNeeds() throws {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-module-probe-\(UUID().uuidString).py").path
        let target = script + ".written"
        try """
            import ctypes, os, socket, threading
            def attempt(name, f):
                try:
                    f(); print(name, "allowed")
                except OSError as e:
                    print(name, "refused", e.errno)
            attempt("socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            attempt("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
            attempt("write", lambda: open("\(target)", "w"))
            attempt("read", lambda: open("/etc/hostname").read())
            def fork():
                pid = os.fork()
                if pid == 0: os._exit(0)
            attempt("fork", fork)
            attempt("kill", lambda: os.kill(os.getppid(), 0))
            threading.Thread(target=lambda: print("thread ran")).start()
            print("nice", os.getpriority(os.PRIO_PROCESS, 0), flush=True)
            if os.environ.get("PROBE_PTRACE"):
                ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0)
            """.write(toFile: script, atomically: true, encoding: .utf8)
        defer { unlink(script); unlink(target) }
        func probe(_ environment: [String]) throws -> (Termination, String) {
            var spec = ChildSpec(workerPath, ["output-module", "--parent", "\(getpid())", "--module", "/usr/bin/python3", "--config", script],
                                 environment: ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"] + environment)
            spec.standardOutput = .pipe
            let ending = try Spawn.run(spec, timeout: .seconds(20))
            return (ending.termination, String(decoding: ending.output, as: UTF8.self))
        }
        let (ended, said) = try probe([])
        XCTAssertEqual(ended, .exited(0), said)
        XCTAssertEqual(said.split(separator: "\n").sorted(), ["fork refused 1", "kill refused 1", "nice 10", "read allowed",
                                                              "socket refused 13", "thread ran", "unix refused 13", "write refused 13"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: target))
        XCTAssertEqual(try probe(["PROBE_PTRACE=1"]).0, .signalled(SIGSYS))
    }

    /// One utterance through the whole path (probe, spare, SET, SPEAK, the pump): raw PCM in a pipe
    /// that is, bit for bit, what `espeak-ng -m -v en -w` writes for the same document; marks came
    /// back from the confined module as our names.
    func testAConfinedModuleRendersWhatEspeakNgRenders() async throws {
        try requireModule()
        let modules = OutputModules(catalog: ModuleCatalog.load(environment: ["HOME": "/nonexistent"]), workerPath: workerPath, log: { _ in })
        let engines = await modules.engines(among: ["espeak-ng", "no-such-module"])
        XCTAssertEqual(engines.map(\.name), ["espeak-ng"])
        let engine = try XCTUnwrap(engines.first)
        XCTAssertEqual(engine.sampleRate, 22050)
        XCTAssertTrue(engine.reportsMarks)
        let text = "Rendered in a confined module. Nothing else."
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        let target = RenderTarget(descriptor: try OutputDescriptor.take(ends[1], accepting: .pipe, what: "test"), encoding: .raw)
        close(ends[1])
        let events = Shared<RenderEvent>()
        _ = modules.render(RenderRequest(id: 1, engine: "espeak-ng", language: "en", voiceName: nil, markup: SpeechMarkup(plain: text)),
                           into: target) { event in events.append(event) }
        var audio: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(ends[0], &buffer, buffer.count)
            guard count > 0 else { break }
            audio += buffer[0..<count]
        }
        close(ends[0])
        let deadline = ContinuousClock.now + .seconds(10)
        while !events.value.contains(.finished(.done)), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        // The module is given back once it rendered all of it: before the end, and before or after
        // the first audio is written, as the threads go.
        XCTAssertEqual(events.value.filter { $0 != .engineReleased }, [.began, .finished(.done)])
        XCTAssertEqual(events.value.dropLast().filter { $0 == .engineReleased }.count, 1, "\(events.value)")
        let reference = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-module-\(UUID().uuidString).wav").path
        defer { unlink(reference) }
        let espeak = try Spawn.run(ChildSpec("/usr/bin/espeak-ng", ["-m", "-v", "en", "-w", reference, "<speak>\(text)</speak>"]),
                                   timeout: .seconds(30))
        XCTAssertEqual(espeak.termination, .exited(0))
        let expected = Array(try Data(contentsOf: URL(fileURLWithPath: reference)).dropFirst(44))
        XCTAssertGreaterThan(expected.count, 40_000)
        XCTAssertEqual(audio.count, expected.count)
        XCTAssertTrue(audio == expected, "the samples differ from espeak-ng's")
    }
}

/// A list another thread appends to.
private final class Shared<Element: Sendable>: Sendable {
    private let items = Locked<[Element]>([])
    func append(_ item: Element) { items.withLock { $0.append(item) } }
    var value: [Element] { items.withLock { $0 } }
}
