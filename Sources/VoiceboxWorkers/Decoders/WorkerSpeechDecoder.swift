import Dispatch
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads

/// One recognition's decoder in a worker process: each call is one bounded request and answer
/// (see `WorkerProtocol`), a suspension of the caller while `DecoderWorker` waits for it. A worker that dies, or does not answer in time, fails the call with
/// `RecognitionError.engineFailure` naming how it ended; it is never used again.
final class WorkerSpeechDecoder: SpeechDecoder {
    typealias Timing = (detectorWarmUp: Double, speechEndDelay: Double)

    let detectorWarmUp: Double
    let speechEndDelay: Double
    private let worker: DecoderWorker
    private let done: @Sendable (DecoderWorker) -> Void
    /// Whether this recognition still holds the worker: an interrupt that comes after it went
    /// back to the pool must not stop it under another recognition.
    private let held = Locked(true)

    init(worker: DecoderWorker, timing: Timing, done: @escaping @Sendable (DecoderWorker) -> Void) {
        self.worker = worker
        detectorWarmUp = timing.detectorWarmUp
        speechEndDelay = timing.speechEndDelay
        self.done = done
    }

    deinit {
        held.withLock { $0 = false }
        done(worker)
    }

    /// Stops the worker (SIGKILL) if this recognition still holds it `worker-cancel` later (a
    /// healthy worker answers any request within milliseconds): a worker that answers gives its
    /// recognition the chance to see the cancel and give it back (a model load saved); one that
    /// does not is stopped, and a call waiting for it returns.
    ///
    /// The worker is held weakly: the recognition keeps its interrupts to its end, and a stream
    /// that gives decoders back and takes fresh ones must not keep every worker it used alive
    /// (the red team saw 23 workers, 2.7 GB, for five competing streams). While this decoder is
    /// held, so is its worker.
    var interrupt: (@Sendable () -> Void)? {
        let held = held
        let grace = worker.bounds[.workerCancel].inSeconds
        return { [weak worker] in
            guard let worker else { return }  // its decoder is gone, and so is the hold on it
            DispatchQueue.global().asyncAfter(deadline: .now() + grace) { [weak worker] in
                held.withLock { if $0 { worker?.stop() } }
            }
        }
    }

    /// Starts a recognition in `worker`; its answer says the decoder's timing.
    static func configure(_ worker: DecoderWorker, _ configuration: RecognitionConfiguration) async throws -> Timing {
        var payload = WorkerProtocol.Payload()
        payload.append(configuration.language)
        payload.append(configuration.grammar ?? "")
        payload.append((configuration.keyphrases ?? []).joined(separator: "\n"))
        payload.append(configuration.keyphraseThreshold)
        payload.append(configuration.hint.rawValue)
        return try await timing(worker.ask(.configure, payload.bytes, bound: worker.answerBound(forSamples: 0)), of: worker)
    }

    nonisolated(nonsending) func process(_ samples: [Int16]) async throws -> Bool {
        var speech = false
        var start = 0
        repeat {
            let end = min(samples.count, start + WorkerProtocol.maximumPayload / 2)
            var bytes = [UInt8]()
            bytes.reserveCapacity(2 * (end - start))
            for sample in samples[start..<end] {
                withUnsafeBytes(of: sample.littleEndian) { bytes.append(contentsOf: $0) }
            }
            let (tag, payload) = try await worker.ask(.audio, bytes, bound: worker.answerBound(forSamples: end - start))
            switch tag {
            case .voice where payload.count == 1: speech = payload[0] == 1
            case .failure: throw DecoderWorker.error(fromFailure: payload)
            default: throw worker.broke("\(tag) in answer to audio")
            }
            start = end
        } while start < samples.count
        return speech
    }

    nonisolated(nonsending) func partial() async -> String? {
        guard let (tag, payload) = try? await worker.ask(.partial, bound: worker.answerBound(forSamples: 0)),
              tag == .text, !payload.isEmpty else { return nil }
        return String(decoding: payload, as: UTF8.self)
    }

    nonisolated(nonsending) func finish() async throws -> RecognitionResult {
        let (tag, bytes) = try await worker.ask(.end, bound: worker.answerBound(forSamples: 0))
        switch tag {
        case .result:
            var payload = WorkerProtocol.Payload(bytes)
            guard let text = payload.string(), let confidence = payload.double(), let count = payload.uint32() else { break }
            var words: [RecognizedWord] = []
            for _ in 0..<count {
                guard let word = payload.string(), let start = payload.double(), let end = payload.double(),
                      let confidence = payload.double() else { throw worker.broke("a malformed result") }
                words.append(RecognizedWord(word: word, start: start, end: end, confidence: confidence))
            }
            return RecognitionResult(text: text, confidence: confidence, words: words)
        case .failure:
            throw DecoderWorker.error(fromFailure: bytes)
        default:
            break
        }
        throw worker.broke("\(tag) in answer to end")
    }

    nonisolated(nonsending) func hearNext(searching: Bool, newStream: Bool) async throws {
        _ = try await Self.timing(worker.ask(.hearing, [searching ? 1 : 0, newStream ? 1 : 0], bound: worker.answerBound(forSamples: 0)),
                            of: worker)
    }

    nonisolated(nonsending) func discard() async throws {
        _ = try await Self.timing(worker.ask(.discard, bound: worker.answerBound(forSamples: 0)), of: worker)
    }

    private static func timing(_ answer: (WorkerProtocol.Tag, [UInt8]), of worker: DecoderWorker) throws -> Timing {
        switch answer.0 {
        case .ready:
            var payload = WorkerProtocol.Payload(answer.1)
            guard let warmUp = payload.double(), let delay = payload.double() else { throw worker.broke("a malformed ready") }
            return (warmUp, delay)
        case .failure:
            throw DecoderWorker.error(fromFailure: answer.1)
        default:
            throw worker.broke("\(answer.0) in answer to configure, discard or hearing")
        }
    }
}
