import VoiceboxContract

/// A recognition under way.
public struct PendingRecognition: Sendable {
    public let id: UInt64
    let task: Task<Result<Recognition, VoiceboxError>, Never>

    /// Waits for the answer.
    public func outcome() async throws(VoiceboxError) -> Recognition {
        try await task.value.get()
    }
}
