import Glibc
import VoiceboxCore
import VoiceboxThreads

/// A SpeechRenderer a test drives: it records what it is asked to render, ends a rendering when
/// told (or at once when cancelled), and renders only the engines it is given.
final class ScriptedRenderer: SpeechRenderer {
    struct Started: Sendable {
        let request: RenderRequest
        let target: RenderTarget
        let events: @Sendable (RenderEvent) -> Void
    }

    private final class Handle: RenderHandle {
        let cancelled: @Sendable () -> Void
        init(_ cancelled: @escaping @Sendable () -> Void) { self.cancelled = cancelled }
        func cancel() { cancelled() }
    }

    let engines: [RenderEngine]
    let defaultEngine = "espeak-ng"
    let defaultLanguage = "en"
    private let state = Locked<(started: [Started], ended: Set<UInt64>)>(([], []))

    init(engines: [RenderEngine] = [ScriptedRenderer.espeak]) { self.engines = engines }

    static let espeak = RenderEngine(name: "espeak-ng", sampleRate: 22050, channels: 1, reportsMarks: true, features: 0xB)

    var started: [Started] { state.withLock { $0.started } }

    func engines(among names: Set<String>) async -> [RenderEngine] { engines.filter { names.contains($0.name) } }

    func render(_ request: RenderRequest, into target: RenderTarget,
                events: @escaping @Sendable (RenderEvent) -> Void) -> any RenderHandle {
        let started = Started(request: request, target: target, events: events)
        state.withLock { $0.started.append(started) }
        return Handle { [weak self] in self?.end(request.id, .cancelled) }
    }

    /// Ends rendering `id` (once), as the real one does: its descriptor closed, then `finished`.
    func end(_ id: UInt64, _ how: RenderEnd = .done) {
        let found: Started? = state.withLock { state in
            guard state.ended.insert(id).inserted else { return nil }
            return state.started.first { $0.request.id == id }
        }
        guard let found else { return }
        found.target.descriptor.close()
        found.events(.finished(how))
    }
}

/// Waits until `condition` holds; a give-up after 30 s, not a speed.
func settle(_ what: String = "the condition", _ condition: @escaping @Sendable () async -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while !(await condition()) {
        guard ContinuousClock.now < deadline else {
            struct Timeout: Error, CustomStringConvertible { let description: String }
            throw Timeout(description: "\(what) did not happen within 30 s")
        }
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// A pipe whose write end is handed to the code under test (the caller's descriptor).
struct TestPipe {
    let read: Int32
    let write: Int32
    init() {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0)
        (read, write) = (ends[0], ends[1])
    }
    func close() {
        Glibc.close(read)
        Glibc.close(write)
    }
}
