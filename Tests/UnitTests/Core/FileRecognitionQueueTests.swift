@testable import TestSupport
import XCTest
@testable import VoiceboxCore

/// The file queue's policy: decoders first, then round-robin by caller, bounded.
final class FileRecognitionQueueTests: XCTestCase {
    func testFilesRunUpToTheLimitThenWaitAndAreServedRoundRobinByCaller() {
        var queue = FileRecognitionQueue(runningLimit: 1, waitingLimit: 10, waitingPerCaller: 5)
        XCTAssertEqual(queue.admit(1, caller: "a"), .run)
        XCTAssertEqual(queue.admit(2, caller: "a"), .wait(ahead: 0))
        XCTAssertEqual(queue.admit(3, caller: "a"), .wait(ahead: 1))
        XCTAssertEqual(queue.admit(4, caller: "a"), .wait(ahead: 2))
        XCTAssertEqual(queue.admit(5, caller: "b"), .wait(ahead: 3))
        XCTAssertEqual(queue.admit(6, caller: "c"), .wait(ahead: 4))
        // a's batch does not hold up b and c: one of a's, then b's, then c's, then a's again.
        var order: [UInt64] = []
        var current: UInt64 = 1
        while let next = queue.finished(current) {
            order.append(next)
            current = next
        }
        XCTAssertEqual(order, [2, 5, 6, 3, 4])
        XCTAssertEqual(queue.running, [], "the last one ended too")
        XCTAssertEqual(queue.waitingCount, 0)
    }

    func testACallerThatDecodesLessComesFirst() {
        var queue = FileRecognitionQueue(runningLimit: 2, waitingLimit: 10, waitingPerCaller: 5)
        XCTAssertEqual(queue.admit(1, caller: "e"), .run)
        XCTAssertEqual(queue.admit(2, caller: "e"), .run)
        XCTAssertEqual(queue.admit(3, caller: "e"), .wait(ahead: 0))
        XCTAssertEqual(queue.admit(4, caller: "c"), .wait(ahead: 1))
        XCTAssertEqual(queue.admit(5, caller: "a"), .wait(ahead: 2))
        XCTAssertEqual(queue.finished(1), 4, "e still decodes one: c, which decodes none, goes first")
        XCTAssertEqual(queue.finished(2), 3, "now e and a decode none: e is first in turn")
        XCTAssertEqual(queue.finished(4), 5, "then a")
    }

    func testAParkedStreamGivesItsDecoderToTheNextAndTakesItsTurnAgain() {
        var queue = FileRecognitionQueue(runningLimit: 1, waitingLimit: 1, waitingPerCaller: 1)
        XCTAssertEqual(queue.admit(1, caller: "stream"), .run)
        XCTAssertEqual(queue.admit(2, caller: "b"), .wait(ahead: 0))
        XCTAssertEqual(queue.park(1), 2, "the waiting file gets the decoder the stalled stream gave back")
        XCTAssertNil(queue.park(1), "parked already")
        XCTAssertFalse(queue.resume(1, caller: "stream"), "audio again: it waits its turn (past the full queue: it was admitted)")
        XCTAssertEqual(queue.finished(2), 1)
        XCTAssertTrue(queue.isRunning(1))
        XCTAssertNil(queue.park(1))
        XCTAssertTrue(queue.resume(1, caller: "stream"), "a free decoder and nobody waiting: at once")
        XCTAssertNil(queue.finished(1))
        XCTAssertEqual(queue.running, [])
    }

    func testParkedStreamsCountAgainstTheLimitsForStreamsButNeverMakeAFileWait() {
        var queue = FileRecognitionQueue(runningLimit: 1, waitingLimit: 3, waitingPerCaller: 2)
        XCTAssertEqual(queue.admit(1, caller: "a", stream: true), .run)
        XCTAssertNil(queue.park(1))
        XCTAssertEqual(queue.admit(2, caller: "a", stream: true), .run, "its decoder is free")
        XCTAssertNil(queue.park(2))
        XCTAssertEqual(queue.admit(3, caller: "a"), .full(perCaller: true), "two parked: the caller's share")
        XCTAssertEqual(queue.admit(4, caller: "b"), .run)
        XCTAssertEqual(queue.admit(5, caller: "a", stream: true), .full(perCaller: true), "a's share")
        XCTAssertEqual(queue.admit(5, caller: "c", stream: true), .wait(ahead: 0),
                       "c has none parked: others' parked streams do not refuse it")
        XCTAssertEqual(queue.admit(7, caller: "d"), .wait(ahead: 1), "a file is not refused for parked streams")
        XCTAssertEqual(queue.admit(8, caller: "e"), .wait(ahead: 2))
        XCTAssertEqual(queue.admit(9, caller: "f"), .full(perCaller: false), "three waiting: the queue's limit")
    }

    /// Streams 1, 2 of the first caller, 3, 4 of the second, ..., each run then parked.
    private func parkTwoStreamsEach(of callers: [String], in queue: inout FileRecognitionQueue) {
        var id: UInt64 = 0
        for caller in callers {
            for _ in 0..<2 {
                id += 1
                XCTAssertEqual(queue.admit(id, caller: caller, stream: true), .run)
                XCTAssertNil(queue.park(id))
            }
        }
    }

    func testParkedStreamsOfManyCallersNeverRefuseTheStreamOfACallerWithNoneParked() {
        var queue = FileRecognitionQueue(runningLimit: 2, waitingLimit: 4, waitingPerCaller: 2)
        parkTwoStreamsEach(of: ["a", "b"], in: &queue)
        XCTAssertEqual(queue.admit(10, caller: "c", stream: true), .run, "four parked, the limit: c has none")
        XCTAssertNil(queue.park(10))
        XCTAssertEqual(queue.admit(11, caller: "c", stream: true), .full(perCaller: false), "c's second: the limit")
        XCTAssertEqual(queue.admit(12, caller: "d", stream: true), .run, "d has none parked")
        XCTAssertNil(queue.finished(1))
        XCTAssertNil(queue.finished(2))
        XCTAssertEqual(queue.admit(11, caller: "c", stream: true), .run, "below the limit again")
    }

    /// Calls sent back to back: the caller's streams before are still decoding (they park only once
    /// they find their writers silent), and count as parked ones do, for its share and for the
    /// exception to the limit in all (a red team's burst parked 96 streams past a limit of 64).
    func testACallersStreamsStillDecodingCountAsItsParkedOnes() {
        var queue = FileRecognitionQueue(runningLimit: 2, waitingLimit: 4, waitingPerCaller: 3)
        parkTwoStreamsEach(of: ["a", "b"], in: &queue)
        XCTAssertEqual(queue.admit(10, caller: "c", stream: true), .run, "four parked, the limit: c has none")
        XCTAssertEqual(queue.admit(11, caller: "c", stream: true), .full(perCaller: false),
                       "c's first still decodes, not parked yet: its second is refused all the same")
        XCTAssertEqual(queue.admit(12, caller: "d", stream: true), .run, "d has none")
        var share = FileRecognitionQueue(runningLimit: 2, waitingLimit: 10, waitingPerCaller: 2)
        XCTAssertEqual(share.admit(1, caller: "a", stream: true), .run)
        XCTAssertEqual(share.admit(2, caller: "a", stream: true), .run)
        XCTAssertEqual(share.admit(3, caller: "a", stream: true), .full(perCaller: true),
                       "two decoding, about to park: the caller's share")
    }

    func testANewcomerWaitsWhileOthersWaitEvenIfADecoderIsFree() {
        var queue = FileRecognitionQueue(runningLimit: 2, waitingLimit: 10, waitingPerCaller: 5)
        XCTAssertEqual(queue.admit(1, caller: "a"), .run)
        XCTAssertEqual(queue.admit(2, caller: "a"), .run)
        XCTAssertEqual(queue.admit(3, caller: "a"), .wait(ahead: 0))
        XCTAssertEqual(queue.finished(1), 3)
        XCTAssertEqual(queue.admit(4, caller: "b"), .wait(ahead: 0))
        XCTAssertEqual(queue.finished(2), 4)
        XCTAssertEqual(queue.running, [3, 4])
    }

    func testTheQueueIsBoundedInAllAndPerCaller() {
        var queue = FileRecognitionQueue(runningLimit: 1, waitingLimit: 3, waitingPerCaller: 2)
        XCTAssertEqual(queue.admit(1, caller: "a"), .run)
        XCTAssertEqual(queue.admit(2, caller: "a"), .wait(ahead: 0))
        XCTAssertEqual(queue.admit(3, caller: "a"), .wait(ahead: 1))
        XCTAssertEqual(queue.admit(4, caller: "a"), .full(perCaller: true))
        XCTAssertEqual(queue.admit(5, caller: "b"), .wait(ahead: 2))
        XCTAssertEqual(queue.admit(6, caller: "c"), .full(perCaller: false))
        XCTAssertEqual(queue.finished(1), 2)
        XCTAssertEqual(queue.admit(7, caller: "c"), .wait(ahead: 2), "a freed place is taken again")
    }

    func testAWithdrawnFileLeavesItsPlaceAndItsCallersTurn() {
        var queue = FileRecognitionQueue(runningLimit: 1, waitingLimit: 10, waitingPerCaller: 5)
        _ = queue.admit(1, caller: "a")
        _ = queue.admit(2, caller: "b")
        _ = queue.admit(3, caller: "c")
        XCTAssertTrue(queue.withdraw(2))
        XCTAssertFalse(queue.withdraw(2))
        XCTAssertFalse(queue.isWaiting(2))
        XCTAssertNil(queue.finished(2), "a withdrawn file frees no decoder")
        XCTAssertEqual(queue.finished(1), 3, "b has no turn left")
        XCTAssertNil(queue.finished(3))
        XCTAssertEqual(queue.running, [])
    }

    func testStreamsPastTheDecoderLimitWaitWhileFilesStillRun() {
        var queue = FileRecognitionQueue(runningLimit: 2, waitingLimit: 10, waitingPerCaller: 5, streamDecoderLimit: 2)
        XCTAssertEqual(queue.admit(1, caller: "a", stream: true), .run)
        XCTAssertNil(queue.park(1))
        XCTAssertEqual(queue.admit(2, caller: "b", stream: true), .run)
        XCTAssertNil(queue.park(2))
        XCTAssertEqual(queue.admit(3, caller: "c", stream: true), .wait(ahead: 0),
                       "two decoders free, but two parked streams hold a decoder each: the limit")
        XCTAssertEqual(queue.admit(4, caller: "d"), .run, "a file is not held up by a stream that cannot start")
        XCTAssertTrue(queue.resume(2, caller: "b"), "a started stream takes a free decoder again")
        XCTAssertEqual(queue.admit(5, caller: "e"), .wait(ahead: 1))
        XCTAssertEqual(queue.finished(1), nil, "a parked stream ends: no decoder frees, both run")
        XCTAssertEqual(queue.finished(4), 3, "c decodes none and may start now")
        XCTAssertEqual(queue.finished(2), 5)
        XCTAssertNil(queue.finished(3))
        XCTAssertNil(queue.finished(5))
        XCTAssertEqual(queue.running, [])
    }

    func testAStreamThatEndsBeforeItStartedFreesNothingItDidNotHold() {
        var queue = FileRecognitionQueue(runningLimit: 1, waitingLimit: 10, waitingPerCaller: 5, streamDecoderLimit: 1)
        XCTAssertEqual(queue.admit(1, caller: "a", stream: true), .run)
        XCTAssertEqual(queue.admit(2, caller: "b", stream: true), .wait(ahead: 0))
        XCTAssertEqual(queue.admit(3, caller: "c", stream: true), .wait(ahead: 1))
        XCTAssertTrue(queue.withdraw(2))
        XCTAssertNil(queue.finished(2), "withdrawn: it held nothing")
        XCTAssertNil(queue.park(1), "c cannot start: a holds the only stream decoder")
        XCTAssertEqual(queue.finished(1), 3)
    }

    func testAStreamAfterItsTurnGoesBehindTheOthersInLine() {
        // What a stream does after each turn of decoding: park, then resume.
        var queue = FileRecognitionQueue(runningLimit: 1, waitingLimit: 10, waitingPerCaller: 5)
        XCTAssertEqual(queue.admit(1, caller: "a", stream: true), .run)
        XCTAssertEqual(queue.admit(2, caller: "b"), .wait(ahead: 0))
        XCTAssertEqual(queue.admit(3, caller: "c", stream: true), .wait(ahead: 1))
        XCTAssertEqual(queue.park(1), 2)
        XCTAssertFalse(queue.resume(1, caller: "a"), "others wait: it goes to the back")
        XCTAssertEqual(queue.finished(2), 3, "c had waited longer")
        XCTAssertEqual(queue.park(3), 1)
        XCTAssertTrue(queue.resume(3, caller: "c") == false)
        XCTAssertEqual(queue.park(1), 3)
        XCTAssertFalse(queue.resume(1, caller: "a"))
        XCTAssertNil(queue.park(5), "not running")
        XCTAssertEqual(queue.finished(3), 1)
        XCTAssertNil(queue.park(1), "nobody else waits")
        XCTAssertTrue(queue.resume(1, caller: "a"), "so its next turn comes at once")
    }

    func testAStreamWhoseWriterIsSilentGivesItsDecoderToAWaitingStream() {
        var queue = FileRecognitionQueue(runningLimit: 2, waitingLimit: 10, waitingPerCaller: 5, streamDecoderLimit: 1)
        XCTAssertEqual(queue.admit(1, caller: "a", stream: true), .run)
        XCTAssertEqual(queue.admit(2, caller: "b", stream: true), .wait(ahead: 0), "a holds the only stream decoder")
        XCTAssertNil(queue.park(1), "parked, a keeps its decoder: b still cannot start")
        XCTAssertEqual(queue.releaseDecoder(1), 2, "a's writer stayed silent: b takes the decoder")
        XCTAssertNil(queue.releaseDecoder(1), "released already")
        XCTAssertFalse(queue.resume(1, caller: "a"), "a's writer sends again: a waits for a decoder, a core is free")
        XCTAssertFalse(queue.isRunning(1))
        XCTAssertNil(queue.releaseDecoder(2), "not parked: nothing to release")
        XCTAssertEqual(queue.finished(2), 1, "b ends: a decodes again")
        XCTAssertNil(queue.finished(1))
        XCTAssertEqual(queue.running, [])
    }

    func testOneCallerHoldsNoMoreThanItsShareOfTheStreamDecoders() {
        var queue = FileRecognitionQueue(runningLimit: 4, waitingLimit: 10, waitingPerCaller: 5, streamDecoderLimit: 4,
                                         streamDecodersPerCaller: 2)
        XCTAssertEqual(queue.admit(1, caller: "a", stream: true), .run)
        XCTAssertEqual(queue.admit(2, caller: "a", stream: true), .run)
        XCTAssertEqual(queue.admit(3, caller: "a", stream: true), .wait(ahead: 0), "a holds its two already")
        XCTAssertEqual(queue.admit(4, caller: "a"), .run, "a's files are not streams: they run")
        XCTAssertEqual(queue.admit(5, caller: "b", stream: true), .run, "another caller's stream starts at once")
        XCTAssertEqual(queue.finished(4), nil, "a core frees, but a's third stream still cannot start")
        XCTAssertNil(queue.park(1))
        XCTAssertEqual(queue.releaseDecoder(1), 3, "a's silent stream gives its place to a's waiting one")
        XCTAssertFalse(queue.resume(1, caller: "a"), "and now waits for one of a's places itself")
        XCTAssertEqual(queue.finished(2), 1)
        XCTAssertNil(queue.finished(1))
        XCTAssertNil(queue.finished(3))
        XCTAssertNil(queue.finished(5))
        XCTAssertEqual(queue.running, [])
    }

    func testStreamsOfOtherCallersAreAskedToYieldWhileAStreamCannotTakeADecoder() {
        var queue = FileRecognitionQueue(runningLimit: 4, waitingLimit: 10, waitingPerCaller: 5, streamDecoderLimit: 2,
                                         streamDecodersPerCaller: 1)
        XCTAssertEqual(queue.admit(1, caller: "a", stream: true), .run)
        XCTAssertEqual(queue.admit(2, caller: "b", stream: true), .run)
        XCTAssertEqual(queue.streamsAskedToYield, [], "nobody waits")
        XCTAssertEqual(queue.admit(3, caller: "a", stream: true), .wait(ahead: 0))
        XCTAssertEqual(queue.streamsAskedToYield, [], "a's own share keeps a's stream waiting: nobody yields to it")
        XCTAssertEqual(queue.admit(4, caller: "c", stream: true), .wait(ahead: 1))
        XCTAssertEqual(queue.streamsAskedToYield, [1, 2], "c waits for a decoder that a and b hold")
        XCTAssertEqual(queue.admit(5, caller: "d"), .run, "files are not held up")
        XCTAssertNil(queue.park(2))
        XCTAssertEqual(queue.releaseDecoder(2), 4, "b yields: c's stream decodes")
        XCTAssertEqual(queue.streamsAskedToYield, [], "b waits now only for its own share")
        XCTAssertFalse(queue.resume(2, caller: "b"))
        XCTAssertEqual(queue.streamsAskedToYield, [1], "b waits for a decoder a holds (c's it gave c itself)")
    }

    func testADecoderGivenBackGoesToTheStreamItWasGivenBackFor() {
        var queue = FileRecognitionQueue(runningLimit: 1, waitingLimit: 10, waitingPerCaller: 5, streamDecoderLimit: 2)
        XCTAssertEqual(queue.admit(1, caller: "a", stream: true), .run)
        XCTAssertEqual(queue.admit(2, caller: "b", stream: true), .wait(ahead: 0))
        XCTAssertEqual(queue.park(1), 2, "a's turn ends: b takes the core and the second decoder")
        XCTAssertFalse(queue.resume(1, caller: "a"), "a keeps its decoder and waits for the core")
        XCTAssertEqual(queue.admit(3, caller: "c", stream: true), .wait(ahead: 1))
        XCTAssertEqual(queue.streamsAskedToYield, [1, 2], "c waits for a decoder a and b hold")
        XCTAssertEqual(queue.park(2), 1, "b yields at a pause: a has the core")
        XCTAssertNil(queue.releaseDecoder(2), "b's decoder is c's now, but the core is a's")
        XCTAssertEqual(queue.streamsAskedToYield, [], "c has its decoder place")
        XCTAssertFalse(queue.resume(2, caller: "b"), "b waits for a decoder again")
        XCTAssertEqual(queue.streamsAskedToYield, [1], "now b waits for one, a's (c's it gave c itself)")
        XCTAssertEqual(queue.park(1), 3, "c decodes before b, who gave the place back")
        XCTAssertFalse(queue.resume(1, caller: "a"))
        XCTAssertEqual(queue.park(3), 1, "a's turn again; b, without a decoder, cannot start")
    }

    func testFreeDecoderPlacesGoOneToEachCallerInTurnBeforeAnySecond() {
        var queue = FileRecognitionQueue(runningLimit: 1, waitingLimit: 10, waitingPerCaller: 5, streamDecoderLimit: 3,
                                         streamDecodersPerCaller: 2)
        XCTAssertEqual(queue.admit(1, caller: "a", stream: true), .run)
        XCTAssertEqual(queue.admit(2, caller: "b", stream: true), .wait(ahead: 0))
        XCTAssertEqual(queue.admit(3, caller: "b", stream: true), .wait(ahead: 1))
        XCTAssertEqual(queue.admit(4, caller: "c", stream: true), .wait(ahead: 2))
        XCTAssertEqual(queue.admit(5, caller: "d", stream: true), .wait(ahead: 3))
        XCTAssertEqual(queue.finished(1), 2, "three places free at once; b is first in turn")
        XCTAssertEqual(queue.park(2), 4, "b's turn ends, b keeps its decoder: c's stream had a place")
        XCTAssertFalse(queue.resume(2, caller: "b"))
        XCTAssertEqual(queue.park(4), 5, "and so had d's: b's second stream got none before d had one")
        XCTAssertFalse(queue.resume(4, caller: "c"))
        XCTAssertEqual(queue.streamsAskedToYield, [], "b holds one as c and d do: its second takes neither's only one")
    }

    func testOneHolderPerWaitingStreamIsAskedToCutTheCallerHoldingMostAndLongestFirst() {
        var queue = FileRecognitionQueue(runningLimit: 8, waitingLimit: 10, waitingPerCaller: 5, streamDecoderLimit: 4,
                                         streamDecodersPerCaller: 3)
        XCTAssertEqual(queue.admit(1, caller: "a", stream: true), .run)
        XCTAssertEqual(queue.admit(2, caller: "b", stream: true), .run)
        XCTAssertEqual(queue.admit(3, caller: "a", stream: true), .run)
        XCTAssertEqual(queue.admit(4, caller: "b", stream: true), .run)
        XCTAssertEqual(queue.streamsAskedToCut, [], "nobody waits")
        XCTAssertEqual(queue.admit(5, caller: "c", stream: true), .wait(ahead: 0))
        XCTAssertEqual(queue.streamsAskedToYield, [1, 2, 3, 4], "any of them may yield at a pause")
        XCTAssertEqual(queue.streamsAskedToCut, [1], "only the longest holder cuts inside speech for one waiting stream")
        XCTAssertNil(queue.park(2))
        XCTAssertEqual(queue.releaseDecoder(2), 5, "b yielded at a pause first: c decodes")
        XCTAssertEqual(queue.streamsAskedToCut, [], "so a need not cut")
        XCTAssertFalse(queue.resume(2, caller: "b"))
        XCTAssertEqual(queue.streamsAskedToCut, [1], "b waits now: a holds two, b one")
        XCTAssertEqual(queue.admit(6, caller: "c", stream: true), .wait(ahead: 1))
        XCTAssertEqual(queue.streamsAskedToCut, [1, 3], "two waiting streams: a's two holders, the longest first")
        XCTAssertEqual(queue.admit(7, caller: "a", stream: true), .wait(ahead: 2))
        XCTAssertEqual(queue.streamsAskedToCut, [1, 3], "a, holding two, takes none of b's or c's only decoders")
        XCTAssertEqual(queue.streamsAskedToYield, [1, 3], "nor at a pause")
    }

    /// CI, 2026-12-05: a third caller's stream, given a decoder by a cut, was asked for it back at
    /// its first pause by the stream that gave it, while another caller held two; it waited a
    /// second cut (8 s more) to finish 2.8 s of speech.
    func testAStreamGivenACallersOnlyDecoderIsNotAskedForItWhileACallerHoldsTwo() {
        var queue = serviceQueue(holding: ["a", "a", "b", "b"])
        XCTAssertEqual(queue.admit(5, caller: "c", stream: true), .wait(ahead: 0))
        XCTAssertEqual(queue.streamsAskedToCut, [1], "the longest holder of the callers holding two")
        XCTAssertEqual(handOver(1, of: "a", in: &queue), 5, "a cuts: c's stream decodes")
        XCTAssertEqual(queue.streamsAskedToYield, [3, 4], "b holds two, a and c one each: only b's are asked")
        XCTAssertEqual(queue.streamsAskedToCut, [3])
        XCTAssertEqual(handOver(3, of: "b", in: &queue), 1, "b yields: a's stream decodes again")
        XCTAssertEqual(queue.streamsAskedToYield, [2], "now a holds two: only a's are asked, never c's, nor 1, which took b's")
        XCTAssertEqual(queue.finished(5), 3, "c's stream ends: b's stream has its place back")
        XCTAssertEqual(queue.streamsAskedToYield, [])
    }

    /// Review, 2026-12-05: a holds two, b and c one; d's stream waits. Only a's are asked: had b's
    /// yielded, b would have asked d's straight back (each holding one then), and the two would
    /// hand one decoder back and forth while a kept two.
    func testAWaitingStreamAsksTheCallerWhoseHandOverEvensThingsOut() {
        var queue = serviceQueue(holding: ["a", "a", "b", "c"])
        XCTAssertEqual(queue.admit(5, caller: "d", stream: true), .wait(ahead: 0))
        XCTAssertEqual(queue.streamsAskedToYield, [1, 2], "a holds two more than d; b and c one more")
        XCTAssertEqual(queue.streamsAskedToCut, [1])
        XCTAssertEqual(handOver(2, of: "a", in: &queue), 5)
        XCTAssertEqual(queue.streamsAskedToYield, [], "one each now: a's second waits for a decoder to free")
        XCTAssertEqual(queue.finished(3), 2, "b's stream ends: a's second has its place")
    }

    /// Second review, 2026-12-05: five callers of one stream each, four decoders. A stream that
    /// took a decoder given back is not asked for it by the one that gave it (they would swap it at
    /// each pause, the cut's 2 s starting again at each, while the other three kept theirs): the
    /// decoders go round.
    func testEqualCallersTakeTurnsRoundAllHoldersNotBackAndForth() {
        var queue = serviceQueue(holding: ["a", "b", "c", "d"])
        XCTAssertEqual(queue.admit(5, caller: "e", stream: true), .wait(ahead: 0))
        XCTAssertEqual(queue.streamsAskedToYield, [1, 2, 3, 4], "all hold one more than e")
        XCTAssertEqual(queue.streamsAskedToCut, [1])
        XCTAssertEqual(handOver(3, of: "c", in: &queue), 5, "c yields at a pause: e decodes")
        XCTAssertEqual(queue.streamsAskedToYield, [1, 2, 4], "e's, which took c's, is not asked straight back")
        XCTAssertEqual(queue.streamsAskedToCut, [1], "the longest holder")
        XCTAssertEqual(handOver(1, of: "a", in: &queue), 3)
        XCTAssertEqual(queue.streamsAskedToYield, [2, 4, 5], "c's, which took a's, is not asked")
        XCTAssertEqual(queue.streamsAskedToCut, [2], "b's is the longest held now")
    }

    /// Review, 2026-12-05: a decoder given back goes to a waiting stream that asked for it, the
    /// one whose caller holds fewest first, not to the first in turn.
    func testADecoderGivenBackGoesToAStreamThatAskedForIt() {
        var queue = serviceQueue(holding: ["a", "a", "b", "x"])
        XCTAssertEqual(queue.admit(5, caller: "x", stream: true), .wait(ahead: 0))
        XCTAssertEqual(queue.streamsAskedToYield, [1, 2], "x holds one: it may ask only a, who holds two")
        XCTAssertEqual(queue.admit(6, caller: "y", stream: true), .wait(ahead: 1))
        XCTAssertEqual(queue.streamsAskedToYield, [1, 2], "y holds none: a's two even things out, so only a's")
        XCTAssertEqual(handOver(1, of: "a", in: &queue), 6, "both asked for it: y, who holds none, before x, first in turn")
        XCTAssertEqual(queue.streamsAskedToYield, [], "a, b, x and y hold one each")
    }

    /// The service's limits (4 stream decoders, 2 a caller), streams 1-4 of `callers` holding one each.
    private func serviceQueue(holding callers: [String]) -> FileRecognitionQueue {
        var queue = FileRecognitionQueue(runningLimit: 8, waitingLimit: 10, waitingPerCaller: 5, streamDecoderLimit: 4,
                                         streamDecodersPerCaller: 2)
        for (index, caller) in callers.enumerated() {
            XCTAssertEqual(queue.admit(UInt64(index + 1), caller: caller, stream: true), .run)
        }
        return queue
    }

    /// A stream gives its decoder back as the service does it (its turn, its decoder, then it waits
    /// again): returns the stream that took it.
    private func handOver(_ id: UInt64, of caller: String, in queue: inout FileRecognitionQueue) -> UInt64? {
        XCTAssertNil(queue.park(id))
        let taker = queue.releaseDecoder(id)
        XCTAssertFalse(queue.resume(id, caller: caller), "the stream that gave its decoder waits for one")
        return taker
    }
}
