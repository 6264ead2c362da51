import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads
import XCTest

/// Renderings shared among callers: four at once per caller, sixteen in all, the next taken from
/// the callers in turn; cancels of waiting and running ones; Busy past a caller's waiting limit.
final class RenderQueueTests: XCTestCase {
    func job(_ id: UInt64, _ caller: String, events: @escaping @Sendable (RenderEvent) -> Void = { _ in }) throws -> RenderQueue.Job {
        let pipe = TestPipe()
        defer { pipe.close() }
        let descriptor = try OutputDescriptor.take(pipe.write, accepting: .pipe, what: "test")
        return RenderQueue.Job(RenderRequest(id: id, engine: "espeak-ng", language: "en", voiceName: nil, markup: SpeechMarkup(plain: "x")),
                               into: RenderTarget(descriptor: descriptor, encoding: .spiel), caller: caller, events: events)
    }

    func testACallerWithManyWaitingHoldsUpOnlyItselfAndCallersTakeTurns() async throws {
        let renderer = ScriptedRenderer()
        var limits = RenderQueue.Limits()
        limits.running = 6
        let queue = RenderQueue(renderer: renderer, limits: limits)
        for id: UInt64 in 1...8 { _ = try await queue.submit(try job(id, "greedy")) }
        XCTAssertEqual(renderer.started.map(\.request.id), [1, 2, 3, 4], "four at once for one caller")
        for id: UInt64 in 11...13 { _ = try await queue.submit(try job(id, "other")) }
        XCTAssertEqual(renderer.started.map(\.request.id), [1, 2, 3, 4, 11, 12], "another caller is not held up")
        renderer.end(1)
        renderer.end(11)
        try await settle("two more to start") { renderer.started.count == 8 }
        XCTAssertEqual(renderer.started.map(\.request.id).suffix(2).sorted(), [5, 13], "in turn, one of each")
        let counts = await queue.counts
        XCTAssertEqual(counts.running, 6)
        XCTAssertEqual(counts.waiting, 3)
    }

    func testCancelsOfWaitingAndRunningRenderingsAndBusy() async throws {
        let renderer = ScriptedRenderer()
        var limits = RenderQueue.Limits()
        limits.waitingPerCaller = 2
        let queue = RenderQueue(renderer: renderer, limits: limits)
        var tickets: [UInt64] = []
        let ended = Locked<[UInt64]>([])
        for id in 1...6 {
            tickets.append(try await queue.submit(try job(UInt64(id), "caller") { event in
                if case .finished(.cancelled) = event { ended.withLock { $0.append(UInt64(id)) } }
            }))
        }
        do {
            _ = try await queue.submit(try job(7, "caller"))
            XCTFail("a seventh: four running, two waiting, the limit")
        } catch let error as VoiceboxError {
            XCTAssertEqual(error.kind, .busy)
        }
        await queue.cancel(tickets[5])  // waiting: ended at once, never started
        XCTAssertEqual(ended.withLock { $0 }, [6])
        await queue.cancel(tickets[0])  // running: the renderer is told
        try await settle("the fifth to start") { renderer.started.count == 5 }
        XCTAssertEqual(ended.withLock { $0 }, [6, 1])
        XCTAssertEqual(renderer.started.map(\.request.id), [1, 2, 3, 4, 5])
    }
}
