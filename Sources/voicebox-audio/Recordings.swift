import VoiceboxContract
import VoiceboxCore
import VoiceboxPulse

/// The recordings the service asked for, by the service's ids; each one's samples are forwarded
/// as they come, and its end once it has ended.
actor Recordings {
    private enum Entry {
        /// Being opened; `closeWanted`: the service gave up on it meanwhile.
        case opening(closeWanted: Bool)
        case open(PulseCaptureStream)
    }

    private let capture: PulseCapture
    private let service: ServiceSocket
    private var entries: [UInt32: Entry] = [:]

    init(capture: PulseCapture, service: ServiceSocket) {
        self.capture = capture
        self.service = service
    }

    func open(_ id: UInt32, source: String?) async -> AudioHelperProtocol.Outcome {
        entries[id] = .opening(closeWanted: false)
        let stream: PulseCaptureStream
        do {
            stream = try await capture.openStream(source: source)
        } catch {
            entries[id] = nil
            return .captureError(error as? CaptureError ?? .failed("\(error)"))
        }
        if case .opening(closeWanted: true) = entries[id] {
            entries[id] = nil
            await stream.close()
            return .done
        }
        entries[id] = .open(stream)
        let service = service
        Task {
            for await chunk in stream.chunks { await service.send(AudioHelperProtocol.samplesFrame(capture: id, chunk)) }
            let failure = await stream.failure
            await service.send(AudioHelperProtocol.frame(.captureEnded, json: AudioHelperProtocol.CaptureEnd(capture: id, failure: failure)))
            self.forget(id)
        }
        return .done
    }

    func setCorked(_ id: UInt32, _ corked: Bool) async {
        guard case .open(let stream) = entries[id] else { return }
        await stream.setCorked(corked)
    }

    /// Returns once the server no longer records for it.
    func close(_ id: UInt32) async {
        switch entries[id] {
        case .opening: entries[id] = .opening(closeWanted: true)
        case .open(let stream): await stream.close()
        case nil: break
        }
    }

    private func forget(_ id: UInt32) {
        if case .open = entries[id] { entries[id] = nil }
    }
}
