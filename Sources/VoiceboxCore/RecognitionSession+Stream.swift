import Dispatch
import VoiceboxLock

/// Reading the caller's stream: as a file is read (to its end, cut into utterances at pauses, the
/// same words as the same audio in a file), or with `silence_seconds`, as the microphone is
/// listened to (ended at the end of speech). Either way a request, `max_seconds` or a writer
/// that stalls past the idle bound ends it with what was heard.
extension RecognitionSession {
    /// Samples per read when the stream ends at the end of speech: 50 ms, the latency of a
    /// microphone chunk. (Read as a file, the file's chunk keeps the file's words.)
    static let liveChunk = 800

    func read(stream input: StreamInput) async throws(VoiceboxError) -> Recognition {
        // Stopped or cancelled while it waited for a decoder: the stream is not even read.
        if let early = try endedBeforeStart() { return early }
        let stream: any AudioStream
        do {
            stream = try parts.streams.open(input)
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
        defer { stream.close() }
        stream.parking = control.parking.map(Self.blocking)
        // A regular file passed as a stream is bounded as a file is.
        if options.maxSeconds == nil, let duration = stream.duration, duration > RecognizeOptions.maximumSeconds {
            throw VoiceboxError(.tooLarge, "the stream holds \(Int(duration)) s of audio; the limit is "
                                + "\(Int(RecognizeOptions.maximumSeconds)) s (pass max_seconds to read the beginning)")
        }
        let decoder = try await makeDecoder()
        guard control.attach(stream.waker) else {
            return try endedBeforeStart() ?? Recognition(id: id, result: .empty, duration: 0, end: .stopped, language: language)
        }
        // Before `stream.close()` (deferred above, so it runs after this): no wake after the close.
        defer { control.detachStream() }
        if let policy = options.others, let session = parts.session {
            await session.begin(.listening, id: id, policy: policy)
        }
        begin()
        let outcome: Result<(RecognitionResult, Double, RecognitionEnd), VoiceboxError>
        do throws(VoiceboxError) {
            outcome = .success(options.endsAtSilence ? try listen(to: stream, decoder) : try readToTheEnd(stream, decoder))
        } catch {
            outcome = .failure(error)
        }
        if options.others != nil { await parts.session?.end(.listening, id: id) }
        var (result, seconds, end) = try outcome.get()
        switch control.request {
        case .cancel: throw RecognitionFault.cancelled
        case .stop, .interrupt: if end == .endOfFile { end = .stopped }
        case nil: if stream.stop == .idle { end = .timeout }
        }
        return Recognition(id: id, result: result, duration: seconds, end: end, language: language)
    }

    /// How long a read waits for the writer before the stream gives its decoder back.
    static let parkAfter = Duration.milliseconds(250)

    /// The service's parking, as the stream's reading thread calls it: blocking that thread (the
    /// session's own queue, never Swift's shared pool) while the service actor does it.
    private static func blocking(_ parking: StreamParking) -> AudioStreamParking {
        AudioStreamParking(after: parkAfter, park: {
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                await parking.park()
                done.signal()
            }
            done.wait()
        }, resume: {
            let done = DispatchSemaphore(value: 0)
            let granted = Locked(false)
            Task.detached {
                let result = await parking.resume()
                granted.withLock { $0 = result }
                done.signal()
            }
            done.wait()
            return granted.withLock { $0 }
        })
    }

    private var streamLimit: Double { options.maxSeconds ?? RecognizeOptions.maximumSeconds }

    /// As a file: `FileReading`'s loop, with the live signals a stream's caller wants.
    private func readToTheEnd(_ stream: any AudioStream, _ decoder: any SpeechDecoder)
        throws(VoiceboxError) -> (RecognitionResult, Double, RecognitionEnd) {
        var meter = LevelMeter()
        var levels = RateLimiter(perSecond: 20)
        let metered = MeteredAudio(stream) { meter.add($0) }
        do {
            let reading = try FileReading.read(metered, through: decoder, maxSeconds: streamLimit, shouldStop: {
                switch control.request {
                case .cancel: throw RecognitionFault.cancelled
                case .stop, .interrupt: true
                case nil: false
                }
            }, afterChunk: { _, segments in
                if levels.allow(at: .now) { parts.bus.emit(.audioLevel(id, meter.read())) }
                reportPartial(decoder, after: segments)
            })
            return (reading.result, reading.seconds, reading.end)
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
    }

    /// As the microphone: one utterance, ended by trailing silence.
    private func listen(to stream: any AudioStream, _ decoder: any SpeechDecoder)
        throws(VoiceboxError) -> (RecognitionResult, Double, RecognitionEnd) {
        var live = LiveAudio(decoder: decoder, options: options)
        live.endpointer.maxSeconds = streamLimit
        var end = RecognitionEnd.endOfFile
        while control.request == nil {
            let chunk: [Int16]
            do { chunk = try stream.read(maxSamples: Self.liveChunk) } catch { throw RecognitionFault.describe(error, options: options) }
            if chunk.isEmpty { break }
            if let decided = try take(chunk, into: decoder, &live) {
                end = decided
                break
            }
        }
        if control.request == .cancel { throw RecognitionFault.cancelled }
        return (try finish(decoder), live.elapsedSeconds, end)
    }
}

/// A stream whose samples also go to a meter as they are read.
private final class MeteredAudio: AudioFile {
    private let stream: any AudioStream
    private let observe: ([Int16]) -> Void

    init(_ stream: any AudioStream, observe: @escaping ([Int16]) -> Void) {
        self.stream = stream
        self.observe = observe
    }

    var duration: Double? { nil }

    func read(maxSamples: Int) throws -> [Int16] {
        let samples = try stream.read(maxSamples: maxSamples)
        observe(samples)
        return samples
    }
}
