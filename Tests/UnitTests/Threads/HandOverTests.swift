@testable import TestSupport
import Foundation
import VoiceboxThreads
import XCTest

final class HandOverTests: XCTestCase {
    /// A value made on a thread of its own reaches the waiting task, both when it comes after the
    /// task has suspended and when it comes first (the body waits until it has been handed over).
    func testAValueMadeOnAnotherThreadReachesTheWaiter() async {
        for handedOverFirst in [false, true] {
            let value = await withHandOver { (done: HandOver<[String]>) in
                let handedOver = DispatchSemaphore(value: 0)
                Thread {
                    done.resume(returning: (0..<8).map { "value \($0)" })
                    handedOver.signal()
                }.start()
                if handedOverFirst { handedOver.wait() }
            }
            XCTAssertEqual(value, (0..<8).map { "value \($0)" }, "handed over first: \(handedOverFirst)")
        }
    }

    func testManyConcurrentHandOversEachGetTheirOwnValue() async {
        let values = await withTaskGroup(of: Int.self) { group in
            for index in 0..<200 {
                group.addTask {
                    await withHandOver { (done: HandOver<Int>) in
                        DispatchQueue.global().async { done.resume(returning: index) }
                    }
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(values.sorted(), Array(0..<200))
    }

    /// Blocking work on a queue: its value comes back, and so does what it threw.
    func testRunBlockingReturnsTheValueOrTheErrorOfTheWork() async throws {
        struct Refused: Error, Equatable {}
        let queue = DispatchQueue(label: "test.blocking")
        let value = try await runBlocking(on: queue) { () throws -> [String] in
            dispatchPrecondition(condition: .onQueue(queue))
            return ["made", "there"]
        }
        XCTAssertEqual(value, ["made", "there"])
        do {
            _ = try await runBlocking(on: queue) { () throws -> Int in throw Refused() }
            XCTFail("the work's error was not thrown")
        } catch {
            XCTAssertEqual(error as? Refused, Refused())
        }
    }
}
