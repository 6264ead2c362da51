import Foundation
import VoiceboxBus
import VoiceboxContract

/// `--stdin`: raw PCM on standard input, streamed to the service as it comes.
struct StdinAudio: Equatable {
    var format = "s16le"
    var rate: UInt32 = 16_000
    var channels: UInt32 = 1

    /// `--format`, `--rate`, `--channels`: true when `item` was one of them.
    mutating func parse(_ item: ArgumentReader.Item, _ reader: inout ArgumentReader) throws(UsageError) -> Bool {
        switch item {
        case .flag("--format"):
            format = try reader.value(of: "--format")
            guard ["s16le", "f32le"].contains(format) else { throw reader.error("--format takes s16le or f32le, not '\(format)'") }
        case .flag("--rate"): rate = try Self.whole(try reader.number(of: "--rate", in: 8_000...48_000), "--rate", reader)
        case .flag("--channels"): channels = try Self.whole(try reader.number(of: "--channels", in: 1...8), "--channels", reader)
        default: return false
        }
        return true
    }

    private static func whole(_ number: Double, _ flag: String, _ reader: ArgumentReader) throws(UsageError) -> UInt32 {
        guard number == number.rounded() else {
            throw reader.error("\(flag) takes a whole number, not '\(number.formatted(.number.grouping(.never)))'")
        }
        return UInt32(number)
    }

    static func wrongWithout(_ item: ArgumentReader.Item) -> String? {
        if case .flag(let flag) = item, ["--format", "--rate", "--channels"].contains(flag) { return "\(flag) describes --stdin, which is missing" }
        return nil
    }
}

extension StdinAudio {
    /// Recognize's stream options: standard input is passed as `stream` (libdbus sends a
    /// duplicate, so ours stays open).
    func options() throws(Failure) -> VarDict {
        guard isatty(0) == 0 else {
            throw Failure("--stdin reads raw audio from a pipe (e.g. parec --raw ... | voicebox listen --stdin), "
                          + "not from a terminal", .usage)
        }
        return VarDict(["stream": .unixFD(0), "stream_format": .string(format), "stream_rate": .uint32(rate),
                        "stream_channels": .uint32(channels)])
    }
}

/// `--stdin` and the flags that describe its audio, as listen and dictate read them.
struct StdinAudioFlags {
    private var given = false
    private var described = StdinAudio()
    private var describing: [ArgumentReader.Item] = []

    /// true when `item` was `--stdin` or one of `--format`, `--rate`, `--channels`.
    mutating func parse(_ item: ArgumentReader.Item, _ reader: inout ArgumentReader) throws(UsageError) -> Bool {
        if case .flag("--stdin") = item {
            given = true
            return true
        }
        guard try described.parse(item, &reader) else { return false }
        describing.append(item)
        return true
    }

    /// The audio `--stdin` carries, nil without `--stdin`; describing a `--stdin` that is not there
    /// is an error.
    func audio(_ reader: ArgumentReader) throws(UsageError) -> StdinAudio? {
        if given { return described }
        if let problem = describing.lazy.compactMap(StdinAudio.wrongWithout).first { throw reader.error(problem) }
        return nil
    }
}
