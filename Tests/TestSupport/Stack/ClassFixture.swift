import Dispatch
import Foundation

/// A session started once for a whole test class (a desktop takes seconds to start), in a
/// directory of its own, and stopped by the class's tearDown. A start that failed is remembered,
/// so the class's other tests fail at once with its error instead of trying again.
actor ClassFixture<Session: Sendable> {
    private let name: String
    private let start: @Sendable (URL) async throws -> Session
    private let end: @Sendable (Session) async -> Void
    private var started: Result<Session, any Error>?
    private var directory: URL?

    init(_ name: String, start: @escaping @Sendable (URL) async throws -> Session, stop: @escaping @Sendable (Session) async -> Void) {
        self.name = name
        self.start = start
        self.end = stop
    }

    func session() async throws -> Session {
        if let started { return try started.get() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-\(name)-\(UUID().uuidString)")
        self.directory = directory
        do {
            started = .success(try await start(directory))
        } catch {
            started = .failure(error)
        }
        return try started!.get()
    }

    /// Its directory (the session's logs) is kept when VOICEBOX_KEEP_SESSIONS is set.
    func stop() async {
        if case .success(let session) = started { await end(session) }
        started = nil
        if let directory, ProcessInfo.processInfo.environment["VOICEBOX_KEEP_SESSIONS"] == nil {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// For a class's synchronous tearDown.
    nonisolated func stopNow() {
        let done = DispatchSemaphore(value: 0)
        Task {
            await stop()
            done.signal()
        }
        done.wait()
    }
}
