@testable import TestSupport
import Dispatch
import XCTest
@testable import VoiceboxPulse

/// The executor of the libpulse actors, without a server: who counts as holding the lock.
final class MainloopExecutorTests: XCTestCase {
    /// A `locked` inside another (an owner's shutdown run from one of its own jobs) must leave the
    /// outer block isolated when it ends; before, it cleared the holder and the next
    /// `assumeIsolated` of the outer block trapped.
    func testANestedLockLeavesTheOuterBlockIsolated() throws {
        let executor = try MainloopExecutor(name: "voicebox-test", label: "voicebox.test.mainloop")
        executor.locked {
            executor.locked { executor.checkIsolated() }
            executor.checkIsolated()
        }
    }

    /// Jobs of an actor on it run on its queue, isolated; so do its timers through `now`.
    func testJobsAndTimersRunIsolated() async throws {
        let probe = try Probe()
        await probe.count()
        let fired = expectation(description: "the timer's work ran in the actor")
        probe.executor.queue.asyncAfter(deadline: .now() + 0.01) {
            probe.now { $0.counted += 1 }
            fired.fulfill()
        }
        await fulfillment(of: [fired], timeout: 10)
        let counted = await probe.counted
        XCTAssertEqual(counted, 2)
    }
}

private actor Probe: MainloopActor {
    nonisolated let executor: MainloopExecutor
    var counted = 0

    init() throws {
        executor = try MainloopExecutor(name: "voicebox-probe", label: "voicebox.test.probe")
    }

    func count() {
        executor.checkIsolated()
        counted += 1
    }
}
