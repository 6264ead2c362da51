import Foundation
import XCTest

/// A process a test starts that runs until it is stopped (a recorder, another application's audio,
/// a bus monitor, a bus of its own).
protocol StoppedAtEnd: AnyObject, Sendable {
    func stopAtEnd()
}

extension XCTestCase {
    /// The way a test stops what it started: a tear-down block, registered where the thing starts,
    /// so it stops when the test ends, passed or thrown, and not earlier (Swift may release an
    /// object after its last use, before the test's last assertion).
    func stopsAtEnd<Thing: StoppedAtEnd>(_ thing: Thing) -> Thing {
        addTeardownBlock { thing.stopAtEnd() }
        return thing
    }
}

extension MonitorRecorder: StoppedAtEnd {
    func stopAtEnd() { stop() }
}

extension BusMonitor: StoppedAtEnd {
    func stopAtEnd() { stop() }
}

extension OtherAudio: StoppedAtEnd {
    func stopAtEnd() { process.signal(SIGKILL) }
}

extension KillableBus: StoppedAtEnd {
    func stopAtEnd() { kill() }
}

extension Player: StoppedAtEnd {
    func stopAtEnd() { process.signal(SIGKILL) }
}

extension ClientRun: StoppedAtEnd {
    func stopAtEnd() { process.signal(SIGKILL) }
}

extension PrivatePulseServer: StoppedAtEnd {
    func stopAtEnd() { kill() }
}
