import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import XCTest

/// Work that loads the machine on purpose: twenty streams of five callers at once, four decoders
/// among them, served fairly in bounded memory, leaving no descriptor open. Run once, on a machine
/// of its own: on cores loaded eight times over by other work, its streams' turns (1 s of wall
/// time each) decoded so little that twenty streams of 2.8 s were not done in 5 minutes, on main
/// as on this branch.
final class StreamLoadTests: ServiceTestCase {
    override class var usesRecordings: Bool { true }
    private let expected = "go forward ten meters"

    func testTwentyStreamsFromFiveCallersAreServedFairlyInBoundedMemory() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let pid = service.daemon.pid
        // The model loaded and warm first, so memory compares like with like.
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        try await service.waitUntilSettled()
        let descriptorsBefore = await settledDescriptorCount(pid, atMost: 0, settle: .milliseconds(300)) ?? 0
        let openBefore = openDescriptors(pid)
        let memoryBefore = residentBytes(pid) ?? 0
        let callers = try (0..<5).map { _ in try BusConnection(address: stack.busAddress) }
        let bytes = try Recordings.bytes()
        var writers: [PipeWriter] = []
        var tasks: [(caller: Int, task: Task<Recognized, any Error>)] = []
        // Each caller queues its four at once, one caller after another.
        for (index, caller) in callers.enumerated() {
            for _ in 0..<4 {
                let writer = try PipeWriter(bytes)
                writers.append(writer)
                let fd = writer.readEnd
                tasks.append((index, Task { try await ServiceHarness.recognize(on: caller, ["stream": .unixFD(fd)], timeout: .seconds(300)) }))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        var results: [(caller: Int, heard: Recognized)] = []
        for (caller, task) in tasks { results.append((caller, try await task.value)) }
        for writer in writers { writer.closeReadEnd() }
        XCTAssertEqual(results.filter { $0.heard.text == expected }.count, 20, results.map(\.heard.text).description)
        // Round-robin by caller: once the first decoders are taken, the next turns go to the other callers.
        let order = service.startedRecognitions.compactMap { id in results.first { $0.heard.id == id }?.caller }
        XCTAssertEqual(order.count, 20)
        print("METRIC twenty streams of five callers started in caller order \(order)")
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let turns = Array(order.dropFirst(cores).prefix(4))
        // Under a sanitizer a stream's 1 s turn can end before all five callers have queued (their
        // admission alone takes that long), so the first queued caller rightly goes again.
        if !underSanitizer {
            XCTAssertEqual(Set(turns).count, 4, "the next four turns went to one caller's queue: \(order)")
        }
        // 10 s to settle: under load (CI's sanitizer run) a descriptor was seen open past 3 s and then
        // gone; a leak stays for good, and the message names what is open.
        let descriptorsAfter = await settledDescriptorCount(pid, atMost: descriptorsBefore, settle: .seconds(10))
        let openAfter = openDescriptors(pid)
        XCTAssertEqual(descriptorsAfter, descriptorsBefore, "descriptors not flat: \(descriptorsAdded(openBefore, openAfter))")
        let memoryAfter = await settledResidentBytes(pid, towards: memoryBefore)
        if !underSanitizer {
            XCTAssertLessThan(memoryAfter - memoryBefore, 16 << 20, "VmRSS grew by \((memoryAfter - memoryBefore) >> 20) MiB")
        }
        for caller in callers { await caller.close() }
    }
}
