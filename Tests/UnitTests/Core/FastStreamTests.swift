import XCTest
@testable import VoiceboxCore

/// What a stream that may come fast keeps for parts, and when it gives up keeping: the rest goes
/// to parts only once the writer closed with enough left, everything kept and within the limit;
/// a writer slower than the pace, a stream past the limit or a spent budget keep nothing.
final class FastStreamTests: XCTestCase {
    /// A stream whose buffer and end the test sets.
    private final class SetStream: AudioStream {
        var buffer: [Int16] = []
        var hasEnded = false
        var readAheadLimit = 0
        var buffered: Int { buffer.count }
        func takeBuffered() -> [Int16] {
            defer { buffer = [] }
            return buffer
        }
        var duration: Double? { nil }
        func read(maxSamples: Int) throws -> [Int16] { [] }
        var stop: AudioStreamStop? { nil }
        var waker: AudioStreamWaker { AudioStreamWaker {} }
        func close() {}
        var parking: AudioStreamParking?
        var writerIdle: Bool { false }
        func waitForWriter(upTo patience: Duration?) throws -> WriterWait { .audio }
        func startTurn() {}
    }

    func testTheRestGoesToPartsOnlyOnceTheWriterClosedWithEnoughLeft() {
        let budget = MemoryBudget(bytes: 1_000_000)
        let stream = SetStream()
        let fast = FastStream(stream, budget: budget, limit: 100_000, rest: 10_000)
        XCTAssertEqual(stream.readAheadLimit, 100_001, "read ahead as far as the limit and one more")
        stream.buffer = Array(repeating: 1, count: 30_000)
        fast.took(Array(repeating: 2, count: 1_600), from: stream)
        XCTAssertTrue(fast.keeping)
        XCTAssertEqual(stream.readAheadLimit, 100_001 - 1_600, "taken and buffered stay within the budget held")
        XCTAssertFalse(fast.partsWanted(stream), "the writer has not closed")
        stream.hasEnded = true
        XCTAssertTrue(fast.partsWanted(stream))
        stream.buffer = Array(repeating: 1, count: 9_999)
        XCTAssertFalse(fast.partsWanted(stream), "too little left for parts")
        stream.buffer = Array(repeating: 1, count: 30_000)
        let whole = fast.whole(stream)
        XCTAssertEqual(whole.samples, Array(repeating: 2, count: 1_600) + Array(repeating: 1, count: 30_000))
        XCTAssertEqual(whole.decoded, 1_600, "what the decoder has heard")
    }

    func testAStreamPastTheLimitKeepsNothingAndGivesTheBudgetBack() {
        let budget = MemoryBudget(bytes: 1_000_000)
        let stream = SetStream()
        let fast = FastStream(stream, budget: budget, limit: 100_000, rest: 10_000)
        stream.buffer = Array(repeating: 1, count: 99_000)
        fast.took(Array(repeating: 2, count: 1_600), from: stream)
        XCTAssertFalse(fast.keeping)
        XCTAssertEqual(stream.readAheadLimit, 0)
        XCTAssertEqual(budget.availableBytes, 1_000_000 - 99_000 * 2, "only what is still buffered is held")
        stream.hasEnded = true
        XCTAssertFalse(fast.partsWanted(stream))
        stream.buffer = []
        fast.took([], from: stream)
        XCTAssertEqual(budget.availableBytes, 1_000_000)
    }

    func testAWriterSlowerThanThePaceKeepsNothing() {
        let stream = SetStream()
        let fast = FastStream(stream, budget: MemoryBudget(bytes: 1_000_000), limit: 100_000, rest: 10_000)
        usleep(useconds_t(FastStream.fastGrace / .microseconds(1)) + 100_000)
        // Half a second of audio in more than the grace: slower than twice real time.
        fast.took(Array(repeating: 2, count: 8_000), from: stream)
        XCTAssertFalse(fast.keeping)
        XCTAssertEqual(stream.readAheadLimit, 0)
    }

    func testASpentBudgetKeepsNothing() {
        let budget = MemoryBudget(bytes: 10_000)
        let stream = SetStream()
        let fast = FastStream(stream, budget: budget, limit: 100_000, rest: 10_000)
        XCTAssertFalse(fast.keeping, "5,000 samples of budget cannot hold 10,000 left for parts")
        XCTAssertEqual(stream.readAheadLimit, 0)
        XCTAssertEqual(budget.availableBytes, 10_000)
    }
}
