/// Reading a file: all of it (or `max_seconds` of it), cut into utterances at every pause as
/// pocketsphinx_continuous cuts it, with progress as it goes.
extension RecognitionSession {
    func read(path: String) async throws(VoiceboxError) -> Recognition {
        // The file first: a missing file should not cost a model load.
        let file: any AudioFile
        do {
            file = try parts.files.open(path: path)
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
        let decoder = try await makeDecoder()
        if let early = try endedBeforeStart() { return early }
        begin()

        let limit = options.maxSeconds.map { Int(($0 * Self.sampleRate).rounded()) }
        let total = [file.duration, options.maxSeconds].compactMap { $0 }.min()
        var segmenter = Endpointer(silenceSeconds: 0, maxSeconds: Self.maxSegmentSeconds)
        var segments: [RecognitionResult] = []
        var progress = RateLimiter(perSecond: 10)
        var taken = 0
        var end = RecognitionEnd.endOfFile
        // One synchronous loop: this runs on the session's own queue, so it holds up no one else.
        reading: while true {
            switch control.request {
            case .cancel: throw RecognitionFault.cancelled
            case .stop: end = .stopped
            case nil: break
            }
            if end == .stopped { break reading }
            var wanted = Self.fileChunk
            if let limit {
                wanted = min(wanted, limit - taken)
                guard wanted > 0 else {
                    end = .maxDuration
                    break reading
                }
            }
            var samples: [Int16]
            do {
                samples = try file.read(maxSamples: wanted)
            } catch {
                throw RecognitionFault.describe(error, options: options)
            }
            if samples.isEmpty { break reading }
            if let limit, taken + samples.count > limit { samples.removeLast(taken + samples.count - limit) }
            taken += samples.count
            let inSpeech = try decode(decoder, samples)
            if segmenter.feed(inSpeech: inSpeech, seconds: Double(samples.count) / Self.sampleRate) != .continue {
                segments.append(try finish(decoder))
                segmenter.reset()
            }
            if let total, total > 0, progress.allow(at: .now) {
                parts.bus.emit(.recognitionProgress(id, min(1, Double(taken) / Self.sampleRate / total)))
            }
            reportPartial(decoder, after: segments)
        }
        segments.append(try finish(decoder))
        let seconds = Double(taken) / Self.sampleRate
        if let total, total > 0 {
            // The last word on progress: 1 at the end of the file or the limit, less when stopped.
            parts.bus.emit(.recognitionProgress(id, end == .stopped ? min(1, seconds / total) : 1))
        }
        return Recognition(id: id, result: RecognitionResult(joining: segments), duration: seconds, end: end,
                           language: language)
    }
}
