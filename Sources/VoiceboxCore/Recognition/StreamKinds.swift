import VoiceboxContract

/// Which streams are "others" to an interruption, and which are calls: by the settings' roles and
/// our own process.
struct StreamKinds: Sendable {
    let settings: AudioSessionSettings
    let ownProcessID: Int32

    /// Not Voicebox's own (the service's, or a stream of a client named Voicebox: the `voicebox`
    /// client's cue tones), not speech-dispatcher's, not a spared role, not a call.
    func isOthers(_ stream: PlaybackStream) -> Bool {
        if stream.processID == ownProcessID { return false }
        if stream.applicationName == "Voicebox" { return false }
        if let name = stream.applicationName?.lowercased(), name.hasPrefix("speech-dispatcher") { return false }
        if let media = stream.mediaName?.lowercased(), media.hasPrefix("speech-dispatcher") { return false }
        if let role = stream.role?.lowercased(), settings.spareRoles.contains(role) { return false }
        return !isCall(stream.role)
    }

    func isCall(_ role: String?) -> Bool {
        guard let role else { return false }
        return settings.callRoles.contains(role.lowercased())
    }

    /// A call taking the audio now: a playing stream of a call role, not ours.
    func isActiveCall(_ stream: PlaybackStream) -> Bool {
        isCall(stream.role) && !stream.corked && stream.processID != ownProcessID
    }

    func isActiveCall(_ recording: RecordingStream) -> Bool {
        isCall(recording.role) && !recording.corked && recording.processID != ownProcessID
    }
}
