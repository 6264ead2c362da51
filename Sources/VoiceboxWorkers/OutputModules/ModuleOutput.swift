/// What a speech-dispatcher output module writes on its standard output, read as its protocol
/// says (speech-dispatcher manual, "Communication Protocol for Output Modules"): lines ending in
/// LF, each a three-digit code and `-` (more lines follow) or ` ` (the block's last line).
/// - replies: 2xx, 3xx, 4xx (e.g. `299-…` `299 OK LOADED SUCCESSFULLY`);
/// - events: `700-NAME` `700 INDEX MARK`, `701 BEGIN`, `702 END`, `703 STOP`, `704 PAUSE`,
///   `706-NAME` `706 ICON`;
/// - audio (`AUDIO audio_output_method=server`): `705-bits=16`, `705-num_channels=1`,
///   `705-sample_rate=22050`, `705-num_samples=N`, `705-big_endian=0`, `705-AUDIO` NUL and the
///   samples, then `705 AUDIO`. In the samples LF and 0x7D are escaped: 0x7D, then the byte with
///   its bit 5 inverted.
///
/// Read strictly: a module is confined because what it reads may be hostile, so what it writes is
/// checked (bounded lines, consistent audio) and anything else is a `Violation`.
struct ModuleOutput {
    enum Item: Equatable {
        case reply(code: Int, lines: [String])
        /// Samples as signed 16-bit little-endian, whatever order the module sent.
        case audio(sampleRate: Int, channels: Int, samples: [UInt8])
        case mark(String)
        /// 701 BEGIN, 702 END, 703 STOP, 704 PAUSE.
        case event(Int)
    }

    struct Violation: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    static let audioLine: [UInt8] = Array("AUDIO".utf8) + [0]

    /// One line's limit: an audio line holds at most twice its samples (every byte escaped), and
    /// sd_espeak-ng sends 10,000 bytes of samples a block.
    static let maximumLine = 1 << 20

    private var buffer: [UInt8] = []
    private var start = 0
    /// The continuation lines of the block under way, and its code.
    private var block: (code: Int, lines: [[UInt8]])?

    /// Where the search for the next line end goes on (what is before it has none).
    private var scanned = 0

    /// The items that `bytes` completes.
    mutating func feed(_ bytes: ArraySlice<UInt8>) throws(Violation) -> [Item] {
        buffer += bytes
        var items: [Item] = []
        while let newline = buffer[max(start, scanned)...].firstIndex(of: 10) {
            let line = buffer[start..<newline]
            start = newline + 1
            scanned = start
            if let item = try take(line) { items.append(item) }
        }
        scanned = buffer.count
        if start > 0 {
            buffer.removeFirst(start)
            scanned -= start
            start = 0
        }
        guard buffer.count <= Self.maximumLine else { throw Violation(description: "a line longer than 1 MiB") }
        return items
    }

    private mutating func take(_ line: ArraySlice<UInt8>) throws(Violation) -> Item? {
        guard line.count >= 4, line.prefix(3).allSatisfy({ (48...57).contains($0) }),
              line[line.startIndex + 3] == 45 || line[line.startIndex + 3] == 32 else {
            throw Violation(description: "a line that is not 'NNN-' or 'NNN '")
        }
        let code = line.prefix(3).reduce(0) { $0 * 10 + Int($1 - 48) }
        let rest = Array(line.dropFirst(4))
        if let open = block, open.code != code {
            throw Violation(description: "code \(code) inside a block of \(open.code)")
        }
        if line[line.startIndex + 3] == 45 {  // '-': more follow
            block = (code, (block?.lines ?? []) + [rest])
            guard block!.lines.count <= 16 else { throw Violation(description: "a block of more than 16 lines") }
            return nil
        }
        let lines = block?.lines ?? []
        block = nil
        switch code {
        case 700:
            guard lines.count == 1, let name = String(validating: lines[0], as: UTF8.self) else {
                throw Violation(description: "an index mark without exactly one name")
            }
            return .mark(name)
        case 701...704:
            return .event(code)
        case 705:
            return try audio(lines)
        case 706:
            return nil  // sound icons: nothing to render
        case 200..<500:
            return .reply(code: code, lines: lines.map { String(decoding: $0, as: UTF8.self) })
        default:
            throw Violation(description: "the unknown code \(code)")
        }
    }

    private func audio(_ lines: [[UInt8]]) throws(Violation) -> Item {
        var fields: [String: Int] = [:]
        var escaped: ArraySlice<UInt8>?
        for line in lines {
            if line.starts(with: Self.audioLine) {
                escaped = line.dropFirst(6)
            } else if let text = String(validating: line, as: UTF8.self), let equals = text.firstIndex(of: "="),
                      let value = Int(text[text.index(after: equals)...]) {
                fields[String(text[..<equals])] = value
            }
        }
        guard let escaped, fields["bits"] == 16, let channels = fields["num_channels"], (1...8).contains(channels),
              let rate = fields["sample_rate"], (1000...192_000).contains(rate), let count = fields["num_samples"] else {
            throw Violation(description: "an audio block that is not 16-bit samples with their rate, channels and count")
        }
        var samples = Self.unescape(escaped)
        guard samples.count == count * channels * 2 else {
            throw Violation(description: "an audio block of \(samples.count) bytes for \(count) samples")
        }
        if fields["big_endian"] == 1 {
            for index in stride(from: 0, to: samples.count, by: 2) { samples.swapAt(index, index + 1) }
        }
        return .audio(sampleRate: rate, channels: channels, samples: samples)
    }

    /// HDLC-style: 0x7D escapes the next byte, whose bit 5 was inverted. (The bulk of what a
    /// module sends goes through here: one pass, no per-byte growth.)
    static func unescape(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: bytes.count) { out, count in
            bytes.withUnsafeBufferPointer { input in
                var read = 0, written = 0
                while read < input.count {
                    let byte = input[read]
                    if byte == 0x7D, read + 1 < input.count {
                        out[written] = input[read + 1] ^ 0x20
                        read += 2
                    } else {
                        out[written] = byte
                        read += 1
                    }
                    written += 1
                }
                count = written
            }
        }
    }
}
