/// What goes into a rendering's descriptor, in order, made from what the engine gives (audio and
/// marks), and when each event is due: `began` once the first audio is written, a caller's mark once
/// the audio before it is. The writer takes one chunk at a time (`next`), writes it with one
/// write(2), and says so (`wrote`).
public struct RenderedStream {
    /// How much of WAV or raw PCM is written at once (a pipe takes what it has room for).
    static let plainChunk = 1 << 16

    public struct FormatError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    private let encoding: RenderEncoding
    private let markup: SpeechMarkup
    /// The format the audio must keep: the engine's as offered (x-spiel and raw PCM are read with
    /// it), or for WAV the first block's (its header says it).
    private var format: (rate: Int, channels: Int)?
    private var chunks: [[UInt8]] = []
    private var head = 0
    /// Bytes queued and written so far, and the events due at a given count of written bytes.
    private var queued = 0
    /// Bytes written so far (a WAV file's header and data).
    public private(set) var written = 0
    private var due: [(at: Int, event: RenderEvent)] = []
    private var began = false
    /// Audio bytes queued (a WAV file's data size).
    public private(set) var audioBytes = 0

    /// `format`: the engine's sample rate and channels (checked for x-spiel and raw).
    public init(encoding: RenderEncoding, markup: SpeechMarkup, format: (rate: Int, channels: Int)) {
        self.encoding = encoding
        self.markup = markup
        if encoding != .wav(seekable: true) && encoding != .wav(seekable: false) { self.format = format }
        if encoding == .spiel { queue(SpielStream.header) }
    }

    private var isWAV: Bool { if case .wav = encoding { true } else { false } }

    /// Samples from the engine (16-bit little-endian).
    public mutating func audio(_ samples: [UInt8], sampleRate: Int, channels: Int) throws(FormatError) {
        if let format {
            guard format == (sampleRate, channels) else {
                throw FormatError(description: "the engine changed its audio from \(format.rate) Hz × \(format.channels) "
                                  + "to \(sampleRate) Hz × \(channels) in one utterance")
            }
        } else {
            format = (sampleRate, channels)
            queue(WAVHeader.bytes(sampleRate: sampleRate, channels: channels))
        }
        guard !samples.isEmpty else { return }
        audioBytes += samples.count
        let chunks: [[UInt8]]
        if encoding == .spiel {
            chunks = SpielStream.audioChunks(samples[...])
        } else {
            // No chunks to keep whole here (WAV, raw PCM): bigger writes, fewer of them.
            chunks = stride(from: 0, to: samples.count, by: Self.plainChunk).map {
                Array(samples[$0..<min(samples.count, $0 + Self.plainChunk)])
            }
        }
        for chunk in chunks {
            queue(chunk)
            if !began {
                began = true
                due.append((queued, .began))  // once this first chunk of audio is written
            }
        }
    }

    /// A mark the engine reached, by the name it was given in the markup.
    public mutating func mark(named name: String) {
        switch markup.mark(named: name) {
        case .word(let word, let sentence)?:
            guard encoding == .spiel else { return }
            if let sentence { queue(SpielStream.event(.sentence, start: sentence.start, end: sentence.end)) }
            queue(SpielStream.event(.word, start: word.start, end: word.end))
        case .caller(let callerName, let at)?:
            if encoding == .spiel { queue(SpielStream.event(.mark, start: at, end: at, name: callerName)) }
            due.append((queued, .mark(callerName)))
        case nil:
            break  // not one of ours: nothing the caller asked for
        }
    }

    /// The end of the engine's audio: a WAV that got none still gets its header.
    public mutating func finish(defaultFormat: (rate: Int, channels: Int)) {
        if isWAV && format == nil {
            format = defaultFormat
            queue(WAVHeader.bytes(sampleRate: defaultFormat.rate, channels: defaultFormat.channels))
        }
    }

    /// The next chunk to write, nil when all are written.
    public func next() -> [UInt8]? { head < chunks.count ? chunks[head] : nil }

    /// The chunk from `next` was written: the events now due, in order.
    public mutating func wrote() -> [RenderEvent] {
        written += chunks[head].count
        chunks[head] = []
        head += 1
        if head > 64 && head * 2 > chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
        return dueNow()
    }

    /// Events due at what is written already (marks before any audio).
    public mutating func dueNow() -> [RenderEvent] {
        var events: [RenderEvent] = []
        while let first = due.first, first.at <= written {
            events.append(first.event)
            due.removeFirst()
        }
        return events
    }

    public var pending: Bool { head < chunks.count }

    /// Bytes queued and not written yet: what the reader has still to take.
    public var buffered: Int { queued - written }

    private mutating func queue(_ chunk: [UInt8]) {
        chunks.append(chunk)
        queued += chunk.count
    }
}
