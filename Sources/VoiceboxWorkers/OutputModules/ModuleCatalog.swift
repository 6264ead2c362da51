import Glibc
import VoiceboxCore

/// speech-dispatcher's output modules as its configuration sets them up: for each module name (the
/// engine ListVoices names) the program and the configuration file speech-dispatcher runs it with,
/// so that a module run here renders exactly what speech-dispatcher would play.
///
/// The configuration is speech-dispatcher's own lookup: the user's (`$XDG_CONFIG_HOME/
/// speech-dispatcher`, where its speechd.conf exists) or the system's (/etc/speech-dispatcher).
/// Its `AddModule "name" "program" "file.conf"` lines name the modules; without any, every
/// `sd_NAME` program in the module directory is one, with NAME.conf (as speech-dispatcher finds
/// them). A module's file is looked for in the user's modules/ first, then the system's.
public struct ModuleCatalog: Sendable, Equatable {
    public struct Module: Sendable, Equatable {
        public var name: String
        public var program: String
        /// nil: the module runs on its defaults.
        public var configuration: String?
        public var rateScale: RateScale
    }

    /// How a rate factor becomes the module's -100 ... 100.
    public enum RateScale: Sendable, Equatable {
        /// sd_espeak-ng maps -100 ... 0 ... 100 linearly onto its EspeakMinRate ... EspeakNormalRate ...
        /// EspeakMaxRate words a minute: a factor is taken of espeak-ng's own normal 175 (what
        /// `espeak-ng -w` speaks), so that 1 renders what espeak-ng renders.
        case espeak(minimum: Int, normal: Int, maximum: Int)
        /// speech-dispatcher's own mapping for any other module: 50·log2(factor).
        case logarithmic
    }

    public static let systemDirectory = "/etc/speech-dispatcher"
    public static let programDirectories = ["/usr/lib/speech-dispatcher-modules", "/usr/local/lib/speech-dispatcher-modules",
                                            "/usr/lib/x86_64-linux-gnu/speech-dispatcher-modules"]

    public var modules: [String: Module]
    public var defaultModule: String
    public var defaultLanguage: String

    /// From the files speech-dispatcher reads, for a process with `environment`.
    public static func load(environment: [String: String] = ProcessEnvironment.variables) -> ModuleCatalog {
        let home = environment["HOME"] ?? "/"
        let userConfig = (environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config") + "/speech-dispatcher"
        let userHasOne = FileSystem.text(atPath: userConfig + "/speechd.conf") != nil
        let directory = userHasOne ? userConfig : systemDirectory
        let programs = programDirectories.first { FileSystem.entries(ofDirectory: $0) != nil } ?? programDirectories[0]
        return ModuleCatalog(speechdConf: FileSystem.text(atPath: directory + "/speechd.conf") ?? "",
                             moduleFiles: [directory + "/modules", systemDirectory + "/modules"],
                             programDirectory: programs, locale: environment["LC_ALL"] ?? environment["LC_MESSAGES"] ?? environment["LANG"],
                             read: { FileSystem.text(atPath: $0) }, list: { FileSystem.entries(ofDirectory: $0) ?? [] })
    }

    /// `read` gives a file's text (nil if it is missing), `list` a directory's entries.
    init(speechdConf: String, moduleFiles: [String], programDirectory: String, locale: String?,
         read: (String) -> String?, list: (String) -> [String]) {
        let lines = Self.directives(speechdConf)
        var named = lines.filter { $0.first?.lowercased() == "addmodule" && $0.count >= 3 }.map { ($0[1], $0[2], $0.count > 3 ? $0[3] : nil) }
        if named.isEmpty {
            named = list(programDirectory).filter { $0.hasPrefix("sd_") && $0 != "sd_generic" }.sorted().map { program in
                let name = String(program.dropFirst(3))
                return (name, program, name + ".conf")
            }
        }
        var modules: [String: Module] = [:]
        for (name, program, file) in named {
            let path = program.hasPrefix("/") ? program : programDirectory + "/" + program
            let configuration = file.flatMap { file in
                file.hasPrefix("/") ? file : moduleFiles.map { $0 + "/" + file }.first { read($0) != nil }
            }
            let scale: RateScale = program.contains("espeak")
                ? Self.espeakScale(configuration.flatMap(read) ?? "") : .logarithmic
            modules[name] = Module(name: name, program: path, configuration: configuration, rateScale: scale)
        }
        self.modules = modules
        let configured = lines.first { $0.first?.lowercased() == "defaultmodule" && $0.count == 2 }?[1]
        defaultModule = configured ?? (modules["espeak-ng"] != nil ? "espeak-ng" : modules.keys.sorted().first ?? "espeak-ng")
        let language = lines.first { $0.first?.lowercased() == "defaultlanguage" && $0.count == 2 }?[1]
        defaultLanguage = language ?? Self.language(ofLocale: locale)
    }

    /// The uncommented lines of a dotconf file as words, quotes taken off.
    static func directives(_ text: String) -> [[String]] {
        text.split(separator: "\n").compactMap { line in
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            var words: [String] = []
            var word = "", quoted = false, any = false
            for character in content {
                if character == "\"" { quoted.toggle(); any = true; continue }
                if !quoted && (character == " " || character == "\t") {
                    if any { words.append(word) }
                    word = ""
                    any = false
                } else {
                    word.append(character)
                    any = true
                }
            }
            if any { words.append(word) }
            return words.isEmpty ? nil : words
        }
    }

    static func espeakScale(_ configuration: String) -> RateScale {
        let lines = directives(configuration)
        func value(_ key: String, _ fallback: Int) -> Int {
            lines.first { $0.first?.lowercased() == key.lowercased() && $0.count == 2 }.flatMap { Int($0[1]) } ?? fallback
        }
        // sd_espeak-ng's own defaults where the file says nothing.
        return .espeak(minimum: value("EspeakMinRate", 80), normal: value("EspeakNormalRate", 170),
                       maximum: value("EspeakMaxRate", 449))
    }

    /// "en_GB.UTF-8" → "en-GB"; C, POSIX or nothing → "en".
    static func language(ofLocale locale: String?) -> String {
        guard let locale, !locale.isEmpty, locale != "C", locale != "POSIX", !locale.hasPrefix("C.") else { return "en" }
        let tag = locale.split(separator: ".").first.map(String.init) ?? locale
        let clean = tag.split(separator: "@").first.map { $0.replacingUnderscores() } ?? "en"
        return LanguageTag.isWellFormed(clean) ? clean : "en"
    }
}

extension ModuleCatalog.RateScale {
    /// The module's rate (-100 ... 100) for a factor of normal speed.
    public func moduleRate(_ factor: Double) -> Int {
        guard factor.isFinite, factor > 0 else { return -100 }
        let rate: Double
        switch self {
        case .espeak(let minimum, let normal, let maximum):
            let wanted = 175 * factor  // espeak-ng's espeakRATE_NORMAL
            let span = Double(wanted >= Double(normal) ? maximum - normal : normal - minimum)
            rate = span > 0 ? (wanted - Double(normal)) * 100 / span : 0
        case .logarithmic:
            rate = 50 * log2(factor)
        }
        return Int(min(100, max(-100, rate.rounded())))
    }
}

private extension Substring {
    func replacingUnderscores() -> String { String(map { $0 == "_" ? "-" : $0 }) }
}
