import VoiceboxContract

/// Reading a file: all of it (or `max_seconds` of it), cut into utterances at every pause as
/// pocketsphinx_continuous cuts it (`FileReading`), with progress and partials as it goes.
extension RecognitionRun {
    func read(opening open: () throws -> any AudioFile) async throws(VoiceboxError) -> Recognition {
        // Stopped or cancelled while it waited for a decoder: the file is not even opened.
        if let early = try endedBeforeStart() { return early }
        // The file first: a missing file should not cost a model load.
        let file: any AudioFile
        do {
            file = try open()
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
        // Bounded: a file longer than the longest max_seconds (24 h: a huge sparse file, say) is
        // refused unless the caller asks for part of it; one of unknown length stops there.
        let limit = options.maxSeconds ?? RecognizeOptions.maximumSeconds
        if options.maxSeconds == nil, let duration = file.duration, duration > limit {
            throw VoiceboxError(.tooLarge, "the file holds \(Int(duration)) s of audio; the limit is \(Int(limit)) s "
                                + "(pass max_seconds to read the beginning)")
        }
        let decoder = try await makeDecoder()
        if let early = try endedBeforeStart() { return early }
        begin()
        if readsInParts(file) { return try await readInParts(try readWhole(file), through: decoder) }

        let total = [file.duration, limit].compactMap { $0 }.min()
        var progress = RateLimiter(perSecond: 10)
        let reading: FileReading.Outcome
        do {
            reading = try await FileReading.read(file, through: decoder, maxSeconds: limit, shouldStop: {
                switch control.request {
                case .cancel: throw RecognitionFault.cancelled
                case .stop, .interrupt: true  // (calls only interrupt microphones)
                case nil: false
                }
            }, afterChunk: { seconds, segments in
                if let total, total > 0, progress.allow(at: .now) {
                    dependencies.bus.emit(Speech1.recognitionProgress, id, min(1, seconds / total))
                }
                await reportPartial(decoder, after: segments)
            })
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
        if let total, total > 0 {
            // The last word on progress: 1 at the end of the file or the limit, less when stopped.
            dependencies.bus.emit(Speech1.recognitionProgress, id, reading.end == .stopped ? min(1, reading.seconds / total) : 1)
        }
        return Recognition(id: id, result: reading.result, duration: reading.seconds, end: reading.end,
                           language: language)
    }
}
