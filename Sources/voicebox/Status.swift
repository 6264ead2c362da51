import Foundation
import VoiceboxBus
import VoiceboxContract
import VoiceboxInsertion

extension Client {
    /// What status prints when the service (or the bus) cannot be reached: one line on standard
    /// output, the reason in it, and nothing on standard error (the answer is the report).
    static func notRunning(_ failure: Failure, json: Bool) -> Failure {
        if json {
            Output.json(["running": false])
        } else if failure.message.hasPrefix("voiceboxd is not running") {
            Output.line(failure.message)
        } else {
            Output.line("voiceboxd is not running: \(failure.message)")
        }
        return Failure.quiet(failure.status)
    }

    /// `status`: whether the service runs, what it is and what it is doing now. 69 when it does not run.
    func status(json: Bool) async throws -> ExitStatus {
        let speech = speech
        let version: String
        do {
            version = try await speech.get(Speech1.version, timeout: .seconds(5))
        } catch {
            let failure = Failure(error)
            guard failure.status == .unavailable else { throw failure }
            throw Self.notRunning(failure, json: json)
        }
        let state = try await checked { () async throws(DBusError) in
            (languages: try await speech.get(Speech1.recognitionLanguages), voiceCount: try await speech.get(Speech1.voiceCount),
             speaking: try await speech.get(Speech1.speaking), paused: try await speech.get(Speech1.paused),
             listening: try await speech.get(Speech1.listening), interrupted: try await speech.get(Speech1.interrupted),
             listeningID: try await speech.get(Speech1.listeningID))
        }
        // Speech engines: the output modules the voices come from (answered from the service's cache).
        let voices = (try? await speech.call(Speech1.listVoices, "", timeout: .seconds(5))) ?? []
        let engines = Array(Set(voices.map(\.engine))).sorted()
        let typing = await Self.typingRoute()
        if json {
            Output.json([
                "running": true, "version": version, "speech_engines": engines, "recognition_engine": "pocketsphinx",
                "recognition_languages": state.languages, "voice_count": state.voiceCount, "listening_id": state.listeningID,
                "speaking": state.speaking, "paused": state.paused, "listening": state.listening, "interrupted": state.interrupted,
                "typing": typing.name,
            ])
        } else {
            func yesNo(_ value: Bool) -> String { value ? "yes" : "no" }
            Output.line("voiceboxd \(version) is running")
            Output.line("speech engines: \(engines.isEmpty ? "none yet" : engines.joined(separator: ", ")) (speech-dispatcher)")
            Output.line("recognition: pocketsphinx, languages \(state.languages.isEmpty ? "none" : state.languages.joined(separator: ", "))")
            Output.line("voices: \(state.voiceCount)")
            Output.line("speaking: \(yesNo(state.speaking))  paused: \(yesNo(state.paused))  "
                        + "listening: \(state.listening ? "yes (recognition \(state.listeningID))" : "no")  "
                        + "interrupted: \(yesNo(state.interrupted))")
            Output.line("dictation: \(typing.description)")
        }
        return .ok
    }

    /// How `dictate` would insert text in this session now (what `--verbose` says when it does).
    static func typingRoute() async -> (name: String, description: String) {
        do {
            let route = try await InsertionRoute.choose(.type, typer: nil, environment: ProcessInfo.processInfo.environment)
            await route.close()
            return (route.name, route.description)
        } catch {
            return ("stdout", "printed: \(error.description)")
        }
    }
}
