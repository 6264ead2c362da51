import Glibc
import VoiceboxCore

/// The files of one pocketsphinx model: an acoustic model directory, a language model and a
/// pronunciation dictionary.
public struct SpeechModel: Sendable, Hashable {
    /// BCP-47, as named by its directory (or "en-US" for Debian's model).
    public var language: String
    /// The acoustic model directory (holds `mdef`, `means`, `feat.params`, ...).
    public var acousticModel: String
    /// An ARPA (`.lm`) or binary (`.lm.bin`, `.lm.dmp`) n-gram language model.
    public var languageModel: String
    public var dictionary: String

    public init(language: String, acousticModel: String, languageModel: String, dictionary: String) {
        self.language = language
        self.acousticModel = acousticModel
        self.languageModel = languageModel
        self.dictionary = dictionary
    }
}

/// Finds models. Besides Debian's en-US model (package pocketsphinx-en-us), each directory
/// `<root>/<language>/` under the search roots is a model when it holds
///   - one subdirectory with `mdef`, `means`, `variances` and `transition_matrices` (the
///     acoustic model, for 16 kHz audio),
///   - one `*.lm.bin`, `*.lm.dmp` or `*.lm` file (the language model),
///   - one `*.dict` or `*.dic` file (the dictionary).
/// The roots are `$XDG_DATA_HOME/voicebox/models` (default `~/.local/share/voicebox/models`)
/// then `<dir>/voicebox/models` for each of `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`).
/// The first root to have a language wins, and a user's model beats Debian's.
/// pocketsphinx ends the process (exit) on some malformed model files, so the catalog skips
/// acoustic models whose `mdef` does not start like one; a damaged file beyond that (one cut
/// short) crashes or ends only the worker process that loads it (`WorkerProtocol`).
public struct ModelCatalog: Sendable, Equatable {
    public var roots: [String]
    /// Used when no root has the language; nil when its files are missing.
    public var builtIn: SpeechModel?

    public init(roots: [String], builtIn: SpeechModel? = ModelCatalog.debianEnglish) {
        self.roots = roots
        self.builtIn = builtIn
    }

    public static let debianEnglish: SpeechModel? = {
        let base = "/usr/share/pocketsphinx/model/en-us"
        let model = SpeechModel(language: "en-US", acousticModel: base + "/en-us",
                                languageModel: base + "/en-us.lm.bin",
                                dictionary: base + "/cmudict-en-us.dict")
        return ModelCatalog.isComplete(model) ? model : nil
    }()

    /// The roots from the XDG base-directory variables in `environment`.
    public static func standard(environment: [String: String] = ProcessEnvironment.variables)
        -> ModelCatalog {
        let home = environment["HOME"] ?? ProcessEnvironment.homeDirectory
        let dataHome = nonEmpty(environment["XDG_DATA_HOME"]) ?? home + "/.local/share"
        let dataDirs = (nonEmpty(environment["XDG_DATA_DIRS"]) ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init)
        return ModelCatalog(roots: ([dataHome] + dataDirs).map { $0 + "/voicebox/models" })
    }

    /// Every usable model, one per language (first root wins), sorted by language.
    public func models() -> [SpeechModel] {
        var byLanguage: [String: SpeechModel] = [:]
        for root in roots.reversed() {  // later roots first, so earlier ones overwrite them
            for model in Self.models(in: root) { byLanguage[model.language.lowercased()] = model }
        }
        if let builtIn, byLanguage[builtIn.language.lowercased()] == nil {
            byLanguage[builtIn.language.lowercased()] = builtIn
        }
        return byLanguage.values.sorted { $0.language < $1.language }
    }

    /// The model for a BCP-47 tag, by `RecognitionLanguageMatching.best`: the same tag (any
    /// case), else one of the same primary language ("en-GB" falls back to "en-US"; "en" takes
    /// any English one). The service names the model's language with the same function before
    /// the engine is asked, so the two cannot disagree.
    public func model(for language: String) -> SpeechModel? {
        let all = models()
        guard let chosen = RecognitionLanguageMatching.best(for: language, among: all.map(\.language)) else { return nil }
        return all.first { $0.language == chosen }
    }

    private static func models(in root: String) -> [SpeechModel] {
        guard let names = FileSystem.entries(ofDirectory: root) else { return [] }
        return names.sorted().compactMap { name in
            guard !name.hasPrefix(".") else { return nil }
            return model(language: name, directory: root + "/" + name)
        }
    }

    private static func model(language: String, directory: String) -> SpeechModel? {
        guard let names = FileSystem.entries(ofDirectory: directory) else {
            return nil
        }
        let paths = names.sorted().map { directory + "/" + $0 }
        guard let acoustic = paths.first(where: isAcousticModel),
              let lm = paths.first(where: { [".lm.bin", ".lm.dmp", ".lm"].contains(where: $0.lowercased().hasSuffix) && isRegularFile($0) }),
              let dict = paths.first(where: { ($0.hasSuffix(".dict") || $0.hasSuffix(".dic")) && isRegularFile($0) })
        else { return nil }
        return SpeechModel(language: language, acousticModel: acoustic, languageModel: lm, dictionary: dict)
    }

    private static func isComplete(_ model: SpeechModel) -> Bool {
        isAcousticModel(model.acousticModel) && isRegularFile(model.languageModel) && isRegularFile(model.dictionary)
    }

    /// The files pocketsphinx needs, each a regular file (a FIFO would hang whoever opens it), and
    /// an `mdef` that is binary ("BMDF", either byte order) or text ("0.3" after comment lines):
    /// pocketsphinx exits on any other. Read without blocking: the catalog is read on every Recognize.
    public static func isAcousticModel(_ directory: String) -> Bool {
        guard ["mdef", "means", "variances", "transition_matrices"].allSatisfy({ isRegularFile(directory + "/" + $0) }) else {
            return false
        }
        let fd = open(directory + "/mdef", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return false }  // swapped meanwhile
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return false }
        let head = bytes[0..<count]
        if head.starts(with: "BMDF".utf8) || head.starts(with: "FDMB".utf8) { return true }
        let firstLine = String(decoding: head, as: UTF8.self).split(whereSeparator: \.isNewline)
            .first { !$0.hasPrefix("#") && !$0.allSatisfy(\.isWhitespace) }
        return firstLine?.trimmingWhitespace == "0.3"
    }

    /// A regular file (after symbolic links), by stat alone: nothing is opened.
    static func isRegularFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
    }

    private static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }
}

extension ModelCatalog {
    /// The model a recognition with `configuration` runs on, its search checked first: what an
    /// engine does before it starts a decoder. Throws `RecognitionError` (a bad search, or no
    /// model for the language), in that order.
    public func model(checking configuration: RecognitionConfiguration) throws -> SpeechModel {
        do {
            try configuration.checkSearch()
        } catch {
            throw error.recognitionError
        }
        guard let model = model(for: configuration.language) else {
            throw RecognitionError.unsupportedLanguage(configuration.language)
        }
        return model
    }
}
