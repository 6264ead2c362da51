import CSeccomp
import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxPulse

// voicebox-audio: the service's sound-server connections, the helper side of AudioHelperProtocol
// (which documents how the service starts it and what it says). Started by voiceboxd, never by
// people.

func fail(_ message: String, status: Int32) -> Never {
    let line = Array("voicebox-audio: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    _exit(status)
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, arguments.first == "--parent", let parent = pid_t(arguments.last!) else {
    fail("started by voiceboxd only (--parent PID)", status: 64)
}
// Dies with the service; a service that died before this line would never kill it.
guard voicebox_prctl(PR_SET_PDEATHSIG, UInt(SIGKILL)) == 0 else { fail("PR_SET_PDEATHSIG failed", status: 1) }
guard getppid() == parent else { _exit(0) }
_ = voicebox_prctl(PR_SET_NO_NEW_PRIVS, 1)

let service = ServiceSocket(descriptor: 3)
let mixer: PulseMixer
do {
    mixer = try PulseMixer()
} catch {
    fail("cannot start the sound-server connection: \(error)", status: 1)
}
let answerer = Answerer(mixer: mixer, recordings: Recordings(capture: PulseCapture(), service: service))

// Requests, each handled on its own: a slow one (a recording that takes its time to open) holds
// up no other. Started before anything is sent, so that the socket is watched by then.
service.start { request in
    Task {
        let outcome = await answerer.answer(request.call)
        await service.send(AudioHelperProtocol.frame(.answer, json: AudioHelperProtocol.Answer(id: request.id, outcome: outcome)))
    }
}
Task {
    for await event in mixer.events { await service.send(AudioHelperProtocol.frame(.mixerEvent, json: event)) }
}
dispatchMain()

/// A request's outcome, from the mixer or the recordings.
struct Answerer: Sendable {
    let mixer: PulseMixer
    let recordings: Recordings

    func answer(_ call: AudioHelperProtocol.Call) async -> AudioHelperProtocol.Outcome {
        do {
            switch call {
            case .serverInfo: return .serverInfo(try await mixer.serverInfo())
            case .playbackStreams: return .playbackStreams(try await mixer.playbackStreams())
            case .recordingStreams: return .recordingStreams(try await mixer.recordingStreams())
            case .setMute(let stream, let muted): try await mixer.setMute(stream, muted)
            case .setVolume(let stream, let volume): try await mixer.setVolume(stream, volume)
            case .rememberedSettings: return .rememberedSettings(try await mixer.rememberedSettings())
            case .remember(let settings): try await mixer.remember(settings)
            case .heldAsGiven(let settings): return .names(try await mixer.heldAsGiven(settings).sorted())
            case .forgetRemembered(let names): try await mixer.forgetRemembered(names)
            case .startCorkTrigger(let role): return .index(try await mixer.startCorkTrigger(role: role))
            case .stopCorkTrigger: await mixer.stopCorkTrigger()
            case .openCapture(let capture, let source): return await recordings.open(capture, source: source)
            case .setCaptureCorked(let capture, let corked): await recordings.setCorked(capture, corked)
            case .closeCapture(let capture): await recordings.close(capture)
            case .ping: break
            }
            return .done
        } catch let error as MixerError {
            return .mixerError(error)
        } catch {
            return .mixerError(.failed("\(error)"))
        }
    }
}
