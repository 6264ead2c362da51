import Foundation
import VoiceboxCore
import VoiceboxPulse
import XCTest

/// What the stack's sound server remembers of an application's or role's streams, read where the
/// server keeps it: PulseAudio's module-stream-restore through ext-stream-restore (pulse-stock), and
/// WirePlumber's restore-stream state file, `$XDG_STATE_HOME/wireplumber/restore-stream` (pipewire),
/// which WirePlumber writes 1 s after a change. pulse-minimal remembers nothing.
enum ServerMemoryProbe {
    enum Kind { case nothing, pulseAudio, wirePlumber }

    static var kind: Kind {
        switch ProcessInfo.processInfo.environment["VOICEBOX_SOUND_SERVER"] {
        case "pulse-stock": .pulseAudio
        case "pipewire": .wirePlumber
        default: .nothing
        }
    }

    /// The entries for `names` (PulseAudio's names, e.g. "sink-input-by-application-name:mpv"), each
    /// as "muted=… volume=…" (volume on PulseAudio's scale; "none" when nothing is kept); an entry the
    /// server does not have is missing. Waits for WirePlumber to have written what it holds.
    static func entries(_ names: [String]) async throws -> [String: String] {
        switch kind {
        case .nothing:
            return [:]
        case .pulseAudio:
            let mixer = try await readyMixer()
            defer { mixer.shutdown() }
            let settings = try await mixer.rememberedSettings()
            var found: [String: String] = [:]
            for setting in settings where names.contains(setting.name) {
                found[setting.name] = "muted=\(setting.muted) volume=\(setting.volume.map { "\($0)" } ?? "none")"
            }
            return found
        case .wirePlumber:
            // WirePlumber saves 1 s after the last change and tells nobody: 3 times that (docs/testing.md).
            try await Task.sleep(for: .seconds(3))
            let state = ProcessInfo.processInfo.environment["XDG_STATE_HOME"] ?? (NSHomeDirectory() + "/.local/state")
            let text = (try? String(contentsOfFile: state + "/wireplumber/restore-stream", encoding: .utf8)) ?? ""
            var values: [String: String] = [:]
            for line in text.split(separator: "\n") {
                guard let equals = line.firstIndex(of: "=") else { continue }
                // (WirePlumber's key file escapes a space as "\s".)
                values[String(line[..<equals]).replacingOccurrences(of: "\\s", with: " ")] = String(line[line.index(after: equals)...])
            }
            var found: [String: String] = [:]
            for name in names {
                guard let key = wirePlumberKey(name), let mute = values[key + ":mute"] else { continue }
                let volume = values[key + ":channelVolumes"].map { list in
                    "[" + list.split(separator: ";").compactMap { Double($0) }
                        .map { String(UInt32((cbrt($0) * 65536).rounded())) }.joined(separator: ", ") + "]"
                } ?? "none"
                found[name] = "muted=\(mute) volume=\(volume)"
            }
            return found
        }
    }

    /// A mixer on the stack's server once it is connected (`.serverReady`), so that its first call
    /// is answered; within 10 s.
    static func readyMixer() async throws -> PulseMixer {
        let mixer = try PulseMixer()
        let ready = try? await bounded(10, "the test's mixer to connect to the sound server") {
            for await event in mixer.events where event == .serverReady { return true }
            return false
        }
        guard ready == true else {
            mixer.shutdown()
            throw ProgramError(description: "the test's mixer did not connect to the sound server")
        }
        return mixer
    }

    /// WirePlumber's key for a PulseAudio name, as pipewire-pulse maps it (roles by its table).
    static func wirePlumberKey(_ name: String) -> String? {
        let roles = ["video": "Movie", "music": "Music", "game": "Game", "event": "Notification", "phone": "Communication",
                     "animation": "Movie", "production": "Production", "a11y": "Accessibility", "test": "Test"]
        for (prefix, property) in [("sink-input-by-media-role:", "media.role"), ("sink-input-by-application-id:", "application.id"),
                                   ("sink-input-by-application-name:", "application.name"), ("sink-input-by-media-name:", "media.name")]
        where name.hasPrefix(prefix) {
            var value = String(name.dropFirst(prefix.count))
            if property == "media.role" { value = roles[value] ?? value }
            return "Output/Audio:\(property):\(value)"
        }
        return nil
    }
}
