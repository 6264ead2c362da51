import Foundation
import Glibc
import VoiceboxBus
import XCTest

/// The sound server's playback and recording streams as `pactl --format=json` shows them (it is
/// the same pactl against PulseAudio and pipewire-pulse): what a user sees in a volume control.
struct ServerStream: Equatable {
    var index: UInt32
    var processID: Int32?
    var role: String?
    var muted: Bool
    var corked: Bool
    var volume: [UInt32]

    /// `server`: another sound server than the stack's (a PULSE_SERVER address).
    static func playback(server: String? = nil) throws -> [ServerStream] { try list("sink-inputs", server: server) }
    static func recording(server: String? = nil) throws -> [ServerStream] { try list("source-outputs", server: server) }

    static func playback(of pid: pid_t) throws -> ServerStream? { try playback().first { $0.processID == pid } }
    static func recording(of pid: pid_t) throws -> ServerStream? { try recording().first { $0.processID == pid } }

    private static func list(_ kind: String, server: String? = nil) throws -> [ServerStream] {
        let output = try run("/usr/bin/pactl", (server.map { ["-s", $0] } ?? []) + ["--format=json", "list", kind])
        guard let entries = try JSONSerialization.jsonObject(with: output) as? [[String: Any]] else { return [] }
        return entries.map { entry in
            let properties = entry["properties"] as? [String: Any] ?? [:]
            let channels = (entry["volume"] as? [String: Any] ?? [:]).values.compactMap { ($0 as? [String: Any])?["value"] as? Int }
            return ServerStream(index: UInt32(entry["index"] as? Int ?? 0),
                                processID: (properties["application.process.id"] as? String).flatMap { Int32($0) },
                                role: properties["media.role"] as? String,
                                muted: entry["mute"] as? Bool ?? false, corked: entry["corked"] as? Bool ?? false,
                                volume: channels.map { UInt32($0) })
        }
    }

    /// Runs a command and returns its standard output.
    static func run(_ path: String, _ arguments: [String]) throws -> Data {
        Data(try runProgram([path] + arguments, seconds: 30).output.utf8)
    }
}

/// Decibels as heard of a volume on PulseAudio's cubic scale (what pactl shows as dB).
func decibels(_ volume: UInt32) -> Double { 60 * log10(Double(volume) / 65536) }

/// A test tone (sox) in a temporary directory.
enum Tone {
    static func file(seconds: Int = 60) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-tone-\(seconds).wav").path
        if !FileManager.default.fileExists(atPath: path) {
            _ = try ServerStream.run("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", path, "synth", "\(seconds)", "sine", "440",
                                                     "vol", "0.5"])
        }
        return path
    }
}

/// A stream that plays until stopped: a tone (paplay) with a media role, or silence in a call
/// (pacat, role phone).
final class PlayingStream: Sendable {
    let process: Subprocess

    /// `application`: its application.name (paplay's own by default), which the server's memory keys it by.
    init(sink: String, role: String?, application: String? = nil) throws {
        var arguments = ["-d", sink]
        if let role { arguments.append("--property=media.role=\(role)") }
        if let application { arguments.append("--client-name=\(application)") }
        process = try Subprocess("/usr/bin/paplay", arguments + [try Tone.file()])
    }

    init(callOn sink: String) throws {
        process = try Subprocess("/usr/bin/pacat", ["-p", "-d", sink, "--property=media.role=phone", "--latency-msec=20", "/dev/zero"])
    }

    var pid: pid_t { process.pid }

    /// Waits until the server lists it; returns it.
    /// Listed and playing: pipewire-pulse can list a new stream as corked for a moment, and a corked stream
    /// is not "other playback" to an interruption that begins then (CI saw ducked_streams 1, not 2).
    func waitUntilListed() async throws -> ServerStream {
        var found: ServerStream?
        try await waitUntil("the stream of \(pid) to play") {
            found = try? ServerStream.playback(of: process.pid)
            return found.map { !$0.corked } ?? false
        }
        return found!
    }

    var state: ServerStream? { try? ServerStream.playback(of: process.pid) }

    /// Its state once the server is done with it: listed, playing, and unchanged for 0.5 s
    /// (WirePlumber applies its memory to a new stream a moment after it appears).
    func settledState() async throws -> ServerStream {
        _ = try await waitUntilListed()
        var last = state, since = ContinuousClock.now
        try await waitUntil("the stream of \(pid) to settle") {
            let now = self.state
            if now != last { (last, since) = (now, ContinuousClock.now) }
            return now != nil && ContinuousClock.now - since >= .milliseconds(500)
        }
        return last!
    }

    func stop() async {
        process.signal(SIGTERM)
        _ = await process.wait()
    }

    deinit { process.signal(SIGKILL) }
}

/// mpv with its MPRIS plug-in (Debian's mpv-mpris), playing a tone in a loop into the test sink.
final class MPVPlayer: Sendable {
    let process: Subprocess
    let name: String

    init(sink: String, bus: BusConnection) async throws {
        process = try Subprocess("/usr/bin/mpv", ["--no-config", "--no-video", "--no-terminal", "--ao=pulse",
                                                  "--audio-device=pulse/\(sink)", "--loop=inf",
                                                  "--script=/usr/lib/mpv-mpris/mpris.so", try Tone.file()])
        let pid = UInt32(process.pid)
        var owned: String?
        try await waitUntil("mpv to own an MPRIS name and play", timeout: .seconds(15)) {
            let names = (try? await bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                             interface: "org.freedesktop.DBus", member: "ListNames"))?
                .first?.arrayElements?.compactMap(\.string) ?? []
            for candidate in names where candidate.hasPrefix("org.mpris.MediaPlayer2.mpv") {
                let owner = try? await bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID",
                                                arguments: [.string(candidate)])
                if owner?.first?.uint32 == pid { owned = candidate }
            }
            guard let owned else { return false }
            return await Self.status(of: owned, on: bus) == "Playing"
        }
        name = owned!
    }

    static func status(of name: String, on bus: BusConnection) async -> String? {
        let reply = try? await bus.call(destination: name, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties",
                                        member: "Get", arguments: [.string("org.mpris.MediaPlayer2.Player"), .string("PlaybackStatus")])
        return reply?.first?.unwrapped.string
    }

    func status(on bus: BusConnection) async -> String? { await Self.status(of: name, on: bus) }

    /// What a user's media keys do.
    func press(_ member: String, on bus: BusConnection) async throws {
        _ = try await bus.call(destination: name, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player",
                               member: member)
    }

    func stop() async {
        process.signal(SIGTERM)
        _ = await process.wait()
    }

    deinit { process.signal(SIGKILL) }
}
