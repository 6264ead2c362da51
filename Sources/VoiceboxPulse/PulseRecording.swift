import CPulse
import Dispatch
import VoiceboxContract
import VoiceboxCore

/// One recording: its own threaded mainloop, context and record stream, from connect to release.
///
/// A fresh context per recording means a restarted server is simply found by the next recording.
///
/// Threads: an actor on a `MainloopExecutor`, so its state is checked by the compiler and guarded
/// by the threaded mainloop's lock. libpulse calls back on the mainloop thread with that lock held;
/// those callbacks (PulseRecording+Callbacks.swift) enter the actor with `assumeIsolated`, do the
/// little work there is right there and hand audio off through an `AsyncStream` continuation.
/// Stopping the mainloop (which must not hold the lock) runs on the executor's queue, outside the
/// actor.
actor PulseRecording: MainloopActor {
    struct Settings: Sendable {
        var server: String?
        var source: String?
        var applicationName: String
        var mediaName: String
        var mediaRole: String
        var openTimeout: Duration
        var closeTimeout: Duration
    }

    enum Phase { case idle, connecting, recording, closing, ended }
    enum EndReason { case closed, failed(CaptureError), cancelled }

    static let sampleRate: UInt32 = 16_000
    /// The fragment size we ask the server for (20 ms). The server sends what its source produces
    /// as soon as it has it (5 ms pieces from a null sink's monitor), at most this much at once;
    /// `assembler` gathers them into chunks of 20–50 ms.
    static let fragmentBytes: UInt32 = sampleRate / 50 * 2

    nonisolated let settings: Settings
    nonisolated let chunks: AsyncStream<[Int16]>
    nonisolated let chunkSink: AsyncStream<[Int16]>.Continuation
    nonisolated let executor: MainloopExecutor

    var phase = Phase.idle
    var context: OpaquePointer?
    var stream: OpaquePointer?
    var assembler = SampleAssembler(minChunk: Int(sampleRate) * 20 / 1000, maxChunk: Int(sampleRate) * 50 / 1000)
    var failure: CaptureError?
    var serverIndex: UInt32?
    var openWaiter: CheckedContinuation<Void, any Error>?
    var closeWaiters: [CheckedContinuation<Void, Never>] = []
    /// Keeps this object alive while the mainloop thread may call back into it; the pointer is
    /// the user data of every callback. Released on `queue` after the mainloop has stopped.
    var selfRetain: Unmanaged<PulseRecording>?

    init(settings: Settings) throws {
        do {
            executor = try MainloopExecutor(name: "voicebox-mic", label: "voicebox.pulse.capture")
        } catch {
            throw CaptureError.failed("cannot create a PulseAudio mainloop")
        }
        self.settings = settings
        // About 5 s of audio at 20 ms per chunk; a reader that far behind loses the oldest.
        (chunks, chunkSink) = AsyncStream.makeStream(of: [Int16].self, bufferingPolicy: .bufferingNewest(256))
        // A reader that stops listening (its task was cancelled) should not keep the microphone.
        chunkSink.onTermination = { [weak self] termination in
            if case .cancelled = termination { self?.closeSoon() }
        }
    }

    var currentFailure: CaptureError? { failure }
    var currentServerIndex: UInt32? { serverIndex }

    // MARK: Helpers

    /// Ends with the context's last error. Reads `self.context`, never a local copy: a libpulse
    /// call that fails may already have run our state callback, which ended us and freed it.
    func endWithLastError() {
        guard let context else { return }
        end(.failed(Self.error(code: pa_context_errno(context), source: settings.source)))
    }

    nonisolated static func owner(_ user: UnsafeMutableRawPointer?) -> PulseRecording {
        Unmanaged<PulseRecording>.fromOpaque(user!).takeUnretainedValue()
    }

    /// The caller frees the result with `pa_proplist_free`.
    nonisolated static func proplist(_ entries: [String: String]) -> OpaquePointer {
        let list = pa_proplist_new()!
        for (key, value) in entries { pa_proplist_sets(list, key, value) }
        return list
    }
}

extension Duration {
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
