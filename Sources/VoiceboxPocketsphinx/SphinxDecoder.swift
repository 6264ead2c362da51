import CPocketsphinx
import Glibc
import VoiceboxCore
import VoiceboxModels
import VoiceboxSndfile

/// One loaded pocketsphinx decoder (`ps_decoder_t`): acoustic model, dictionary and, when asked
/// for, the n-gram language model. pocketsphinx 0.8 cannot share a loaded model between
/// decoders (and its n-gram model keeps a lookup cache it writes while decoding), so each
/// decoder owns a full copy; a decoder worker keeps its one loaded from recognition to recognition.
final class SphinxDecoder {
    /// pocketsphinx's name for the search it builds from `-lm` at load time.
    static let defaultSearch = "_default"
    /// Our name for the grammar or keyphrase search of the current recognition.
    static let customSearch = "voicebox"

    let pointer: OpaquePointer
    let hasLanguageModel: Bool
    let log: LogSink?
    /// The cepstral mean normalization's starting point (the model's -cmninit).
    private let initialCepstralMean: [mfcc_t]

    /// Loads the model: slow with the language model, much faster without.
    init(model: SpeechModel, languageModel: Bool, log: LogSink?) throws {
        var arguments = ["-hmm", model.acousticModel, "-dict", model.dictionary]
        if languageModel { arguments += ["-lm", model.languageModel] }
        let (loaded, errors) = SphinxLog.scope(sink: log) { () -> OpaquePointer? in
            // cmd_ln_init is C-variadic; cmd_ln_parse_r takes the same pairs as an argv vector
            // and copies the strings.
            let argv = arguments.map { strdup($0) }
            defer { argv.forEach { free($0) } }
            var vector = argv
            guard let config = cmd_ln_parse_r(nil, ps_args(), Int32(vector.count), &vector, 1) else {
                return nil
            }
            defer { cmd_ln_free_r(config) }  // ps_init keeps its own reference
            return ps_init(config)
        }
        guard let loaded else {
            let reason = errors.isEmpty ? "unknown error" : errors.joined(separator: "; ")
            throw RecognitionError.engineFailure(
                "cannot load the \(model.language) model (\(model.acousticModel)): \(reason)")
        }
        // Everything upstream delivers 16 kHz; a model for telephone audio (8 kHz) would hear noise.
        let sampleRate = cmd_ln_float_r(ps_get_config(loaded), "-samprate")
        guard sampleRate == Double(AudioFileReader.sampleRate) else {
            _ = SphinxLog.scope(sink: log) { ps_free(loaded) }
            throw RecognitionError.engineFailure(
                "the \(model.language) model expects \(Int(sampleRate)) Hz audio, not \(AudioFileReader.sampleRate) Hz")
        }
        pointer = loaded
        initialCepstralMean = Self.cepstralMean(loaded).map { Array($0.mean) } ?? []
        hasLanguageModel = languageModel
        self.log = log
    }

    deinit {
        let pointer = self.pointer
        _ = SphinxLog.scope(sink: log) { ps_free(pointer) }
    }

    /// Makes the decoder hear the next stream as a freshly loaded one would. pocketsphinx keeps
    /// adapting its cepstral mean across utterances, which suits one stream but not the next
    /// caller's: a reused decoder would give results that depend on what it decoded before
    /// (espeak-ng's "okay" came out as "no" after a few other words). Nothing in the 0.8 API
    /// resets it, so this writes sphinxbase's public `cmn_t` back to its state after loading.
    func forgetEarlierStreams() {
        guard let state = Self.cepstralMean(pointer), state.mean.count == initialCepstralMean.count else { return }
        for index in state.mean.indices {
            state.mean[index] = initialCepstralMean[index]
            state.sum[index] = 0
        }
        state.cmn.pointee.nframe = 0
    }

    private static func cepstralMean(_ ps: OpaquePointer)
        -> (cmn: UnsafeMutablePointer<cmn_t>, mean: UnsafeMutableBufferPointer<mfcc_t>, sum: UnsafeMutableBufferPointer<mfcc_t>)? {
        guard let feat = ps_get_feat(ps), let cmn = feat.pointee.cmn_struct,
              let mean = cmn.pointee.cmn_mean, let sum = cmn.pointee.sum else { return nil }
        let count = Int(cmn.pointee.veclen)
        return (cmn, UnsafeMutableBufferPointer(start: mean, count: count), UnsafeMutableBufferPointer(start: sum, count: count))
    }

    /// Runs `body` with pocketsphinx's messages going to our log; returns its error lines too.
    func call<T>(_ body: (OpaquePointer) throws -> T) rethrows -> (T, errors: [String]) {
        try SphinxLog.scope(sink: log) { try body(pointer) }
    }
}
