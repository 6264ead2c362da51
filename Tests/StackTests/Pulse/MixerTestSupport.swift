import Foundation
@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import VoiceboxPulse
import VoiceboxThreads
import XCTest

/// A private PulseAudio with one null sink as the default, for mixer tests: players, recorders
/// and `pactl` all talk to it by address.
/// Stopped, with every player and recorder it started, by the test's tear-down block
/// (`stopsAtEnd(MixerTestServer())`).
final class MixerTestServer: StoppedAtEnd {
    let server: PrivatePulseServer
    private let clients = Locked<[Subprocess]>([])
    var address: String { server.address }

    func stopAtEnd() {
        for client in clients.withLock({ $0 }) { client.signal(SIGKILL) }
        server.kill()
    }

    init(extraModules: [String] = []) throws {
        _ = try sharedServerEnvironment()  // a test machine with PulseAudio, as the other tests need
        server = try PrivatePulseServer(modules: ["load-module module-null-sink sink_name=mixer_out",
                                                  "set-default-sink mixer_out"] + extraModules)
        try server.start()
    }

    /// `pacat` playing silence with `role`; low latency, so it is "playing" at once. Stopped with
    /// the server (or earlier by the test).
    func play(role: String?, name: String = "mixer test player") throws -> Subprocess {
        let role = role.map { ["--property=media.role=\($0)"] } ?? []
        let player = try Subprocess("/usr/bin/pacat", ["-p", "-s", address, "--latency-msec=20", "--client-name=mixer-test",
                                                       "--stream-name=\(name)"] + role + ["/dev/zero"], stderrFD: devNull)
        clients.withLock { $0.append(player) }
        return player
    }

    /// `parec` recording the sink's monitor with `role`, into nowhere; stopped with the server.
    func record(role: String) throws -> Subprocess {
        let recorder = try Subprocess("/usr/bin/parec", ["-s", address, "-d", "mixer_out.monitor", "--latency-msec=20",
                                                         "--client-name=mixer-test-rec", "--property=media.role=\(role)", "/dev/null"],
                                      stderrFD: devNull)
        clients.withLock { $0.append(recorder) }
        return recorder
    }

    @discardableResult
    func pactl(_ arguments: String...) throws -> String {
        let result = try runCommand(["pactl", "-s", address] + arguments, seconds: 10)
        guard result.status == 0 else { throw CommandError(description: "pactl \(arguments) failed with \(result.status)") }
        return result.output
    }

    /// The block `pactl list sink-inputs` prints for `index`; empty if there is none.
    func sinkInput(_ index: UInt32) throws -> String {
        try pactl("list", "sink-inputs").components(separatedBy: "Sink Input #").first { $0.hasPrefix("\(index)\n") } ?? ""
    }

    private let devNull = open("/dev/null", O_WRONLY)
    deinit { close(devNull) }
}

/// Reads a mixer's events in the background, each with its arrival time.
actor MixerEventRecorder {
    struct Arrival: Sendable {
        var event: MixerEvent
        var at: ContinuousClock.Instant
    }

    private(set) var arrivals: [Arrival] = []
    private(set) var finished = false
    private var reader: Task<Void, Never>?

    static func start(_ events: AsyncStream<MixerEvent>) async -> MixerEventRecorder {
        let recorder = MixerEventRecorder()
        await recorder.begin(events)
        return recorder
    }

    private func begin(_ events: AsyncStream<MixerEvent>) {
        reader = Task { [weak self] in
            for await event in events { await self?.append(event) }
            await self?.markFinished()
        }
    }

    private func append(_ event: MixerEvent) { arrivals.append(Arrival(event: event, at: .now)) }
    private func markFinished() { finished = true }

    var events: [MixerEvent] { arrivals.map(\.event) }

    /// The first event from `start` on that matches, waiting up to `timeout`; on a timeout it
    /// prints the events it has (XCTest's messages cannot await them).
    func first(after start: Int = 0, within timeout: Duration = .seconds(10),
               where matches: (MixerEvent) -> Bool) async -> Arrival? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let found = arrivals.dropFirst(start).first(where: { matches($0.event) }) { return found }
            if ContinuousClock.now >= deadline {
                print("MixerEventRecorder: no matching event within \(timeout); events: \(events)")
                return nil
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    var count: Int { arrivals.count }
}

extension MixerEvent {
    var playback: PlaybackStream? { if case .playbackChanged(let stream) = self { stream } else { nil } }
    var recording: RecordingStream? { if case .recordingChanged(let stream) = self { stream } else { nil } }
}

/// utime + stime, in clock ticks (1/100 s), of this process or of its threads named `thread`.
func cpuTicks(thread: String? = nil) -> Int {
    func ticks(_ statPath: String) -> Int {
        let stat = (try? String(contentsOfFile: statPath, encoding: .utf8)) ?? ""
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        guard fields.count > 12 else { return 0 }
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }
    guard let thread else { return ticks("/proc/self/stat") }
    return threads(named: thread).reduce(0) { $0 + ticks("/proc/self/task/\($1)/stat") }
}

/// Task ids of this process's threads whose name starts with `prefix`.
func threads(named prefix: String) -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix(prefix) == true
    }
}

func milliseconds(_ duration: Duration) -> Double { (duration / .milliseconds(1) * 10).rounded() / 10 }
