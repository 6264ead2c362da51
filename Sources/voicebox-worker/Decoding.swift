import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxModels
import VoiceboxPocketsphinx

/// Mode `decoder` (see `WorkerProtocol`): loads one model, then decodes the recognitions the
/// service sends it over descriptor 3, one request and one answer at a time, until the service
/// closes its end.
enum Decoding {
    static let channel: Int32 = 3

    static func run(_ options: [String: String]) -> Never {
        let loaded = load(options)
        send(WorkerProtocol.encode(.loaded), to: channel)
        var requests = RequestReader(descriptor: channel)
        var decoder: PocketsphinxDecoder?
        while let (tag, payload) = requests.next() {
            answer(tag, payload, loaded: loaded, &decoder)
        }
        exit(0)
    }

    /// Confined, the model loaded and the memory limit set; a failure is sent, and the worker exits.
    private static func load(_ options: [String: String]) -> LoadedModel {
        guard let parent = options["parent"].flatMap({ pid_t($0) }), let language = options["language"],
              let acoustic = options["acoustic"], let dictionary = options["dictionary"] else {
            fail("decoder needs --parent PID --language TAG --acoustic DIR --dictionary FILE", status: 64)
        }
        let languageModel = options["language-model"]
        let logsAll = options["log"] == "all"
        if let why = Confinement.apply(parent: parent, readsFiles: true) {
            send(WorkerProtocol.decoderFailure(kind: UInt8(ascii: "e"), "the recognition worker cannot confine itself (\(why))"), to: channel)
            exit(1)
        }
        let model = SpeechModel(language: language, acousticModel: acoustic, languageModel: languageModel ?? "", dictionary: dictionary)
        let loaded: LoadedModel
        do {
            loaded = try LoadedModel(model: model, languageModel: languageModel != nil, log: { line in forward(line, all: logsAll) })
        } catch {
            send(failure(error), to: channel)
            exit(1)
        }
        var limit = rlimit(rlim_cur: rlim_t(WorkerProtocol.decoderDataLimit), rlim_max: rlim_t(WorkerProtocol.decoderDataLimit))
        // Not under a sanitizer: its shadow memory is private mappings that RLIMIT_DATA counts.
        if !Confinement.sanitized, setrlimit(__rlimit_resource_t(RLIMIT_DATA.rawValue), &limit) != 0 {
            send(WorkerProtocol.decoderFailure(kind: UInt8(ascii: "e"), "the recognition worker cannot limit its memory"), to: channel)
            exit(1)
        }
        return loaded
    }

    /// One request of the service, answered on the channel; `decoder` is the recognition's.
    private static func answer(_ tag: WorkerProtocol.Tag, _ payload: [UInt8], loaded: LoadedModel,
                               _ decoder: inout PocketsphinxDecoder?) {
        switch tag {
        case .configure:
            decoder = nil  // ends the previous recognition first: one search at a time
            do {
                guard let configuration = configuration(payload) else { fail("a malformed configure request", status: 65) }
                let made = try loaded.decoder(for: configuration)
                decoder = made
                send(ready(made), to: channel)
            } catch {
                send(failure(error), to: channel)
            }
        case .audio:
            guard let decoder, let samples = WorkerProtocol.samples(fromPayload: payload) else { fail("audio before configure", status: 65) }
            do {
                let speech = try samples.withUnsafeBufferPointer { try decoder.process($0) }
                send(WorkerProtocol.encode(.voice, [speech ? 1 : 0]), to: channel)
            } catch {
                send(failure(error), to: channel)
            }
        case .partial:
            send(WorkerProtocol.encode(.text, Array((decoder?.partial() ?? "").utf8)), to: channel)
        case .end:
            guard let decoder else { fail("end before configure", status: 65) }
            do {
                send(result(try decoder.finish()), to: channel)
            } catch {
                send(failure(error), to: channel)
            }
        case .discard:
            guard let decoder else { fail("discard before configure", status: 65) }
            do {
                try decoder.discard()
                send(ready(decoder), to: channel)
            } catch {
                send(failure(error), to: channel)
            }
        case .hearing:
            guard let decoder, payload.count == 2 else { fail("a malformed hearing request", status: 65) }
            do {
                try decoder.hearNext(searching: payload[0] == 1, newStream: payload[1] == 1)
                send(ready(decoder), to: channel)
            } catch {
                send(failure(error), to: channel)
            }
        default:
            fail("an unexpected request \(tag)", status: 65)
        }
    }

    /// Error lines go out as they come, as reasons (an engine that then exits or crashes is named
    /// by them); with `--log all`, every line as it is too.
    private static func forward(_ line: String, all: Bool) {
        if let reason = LoadedModel.errorReason(line) {
            send(WorkerProtocol.encode(.log, [UInt8(ascii: "e")] + Array(reason.utf8.prefix(4096))), to: channel)
        }
        if all { send(WorkerProtocol.encode(.log, [UInt8(ascii: "i")] + Array(line.utf8.prefix(4096))), to: channel) }
    }

    private static func configuration(_ bytes: [UInt8]) -> RecognitionConfiguration? {
        var payload = WorkerProtocol.Payload(bytes)
        guard let language = payload.string(), let grammar = payload.string(), let keyphrases = payload.string(),
              let threshold = payload.double(), let hint = payload.string().flatMap(RecognitionHint.init(rawValue:)) else { return nil }
        return RecognitionConfiguration(language: language, grammar: grammar.isEmpty ? nil : grammar,
                                        keyphrases: keyphrases.isEmpty ? nil : keyphrases.split(separator: "\n").map(String.init),
                                        keyphraseThreshold: threshold, hint: hint)
    }

    private static func ready(_ decoder: PocketsphinxDecoder) -> [UInt8] {
        var payload = WorkerProtocol.Payload()
        payload.append(decoder.detectorWarmUp)
        payload.append(decoder.speechEndDelay)
        return WorkerProtocol.encode(.ready, payload.bytes)
    }

    private static func result(_ result: RecognitionResult) -> [UInt8] {
        var payload = WorkerProtocol.Payload()
        payload.append(result.text)
        payload.append(result.confidence)
        payload.append(UInt32(result.words.count))
        for word in result.words {
            payload.append(word.word)
            payload.append(word.start)
            payload.append(word.end)
            payload.append(word.confidence)
        }
        return WorkerProtocol.encode(.result, payload.bytes)
    }

    private static func failure(_ error: any Error) -> [UInt8] {
        switch error as? RecognitionError {
        case .invalidGrammar(let why): WorkerProtocol.decoderFailure(kind: UInt8(ascii: "g"), why)
        case .invalidArgument(let why): WorkerProtocol.decoderFailure(kind: UInt8(ascii: "a"), why)
        case .engineFailure(let why): WorkerProtocol.decoderFailure(kind: UInt8(ascii: "e"), why)
        default: WorkerProtocol.decoderFailure(kind: UInt8(ascii: "e"), "\(error)")
        }
    }
}

/// Blocking reads of whole requests from the service; nil once it closed its end.
struct RequestReader {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    /// What one read(2) fills, kept from request to request (audio comes many times a second).
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)

    init(descriptor: Int32) { self.descriptor = descriptor }

    mutating func next() -> (WorkerProtocol.Tag, [UInt8])? {
        guard fill(5) else { return nil }
        guard let tag = WorkerProtocol.Tag(rawValue: buffer[0]) else { fail("an unknown request \(buffer[0])", status: 65) }
        var length = 0
        for index in 0..<4 { length |= Int(buffer[1 + index]) << (8 * index) }
        guard length <= WorkerProtocol.maximumPayload else { fail("a request of \(length) bytes", status: 65) }
        guard fill(5 + length) else { return nil }
        let payload = Array(buffer[5..<(5 + length)])
        buffer.removeFirst(5 + length)
        return (tag, payload)
    }

    private mutating func fill(_ count: Int) -> Bool {
        while buffer.count < count {
            let got = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return false }
            buffer.append(contentsOf: chunk[0..<got])
        }
        return true
    }
}
