import Foundation
import Glibc
import VoiceboxBus
import VoiceboxContract
import VoiceboxThreads
import XCTest

/// A pipe whose write end a thread fills, in `piece`s `pause` apart, then closes (or keeps open
/// for 30 s more). The read end is passed to the service; the test closes its own copy.
final class PipeWriter: Sendable {
    enum Outcome: Equatable { case finished, brokenPipe }

    let readEnd: Int32
    private let outcome = Locked<Outcome?>(nil)

    init(_ bytes: [UInt8], piece: Int = 65_536, pause: Duration = .zero, keepOpen: Bool = false) throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
        readEnd = ends[0]
        let writer = ends[1]
        let outcome = outcome
        Thread.detachNewThread {
            signal(SIGPIPE, SIG_IGN)  // the test process's: a closed pipe is an error to see, not a death
            var offset = 0
            var result = Outcome.finished
            while offset < bytes.count {
                let count = min(piece, bytes.count - offset)
                let wrote = bytes[offset..<offset + count].withUnsafeBytes { write(writer, $0.baseAddress, count) }
                if wrote < 0 {
                    if errno == EINTR { continue }
                    result = .brokenPipe
                    break
                }
                offset += wrote
                if pause > .zero { usleep(UInt32(pause / .microseconds(1))) }
            }
            if keepOpen, result == .finished { usleep(30_000_000) }
            close(writer)
            outcome.withLock { $0 = result }
        }
    }

    func closeReadEnd() { close(readEnd) }

    /// How the writer ended, waiting for it up to `timeout`; nil if it still writes.
    func result(timeout: Duration) async -> Outcome? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let done = outcome.withLock({ $0 }) { return done }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return outcome.withLock { $0 }
    }
}
