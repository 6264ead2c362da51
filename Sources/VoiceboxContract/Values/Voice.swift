/// One voice of one of speech-dispatcher's output modules, as ListVoices gives it.
public struct Voice: Sendable, Hashable, Comparable {
    /// Stable and unique: "<engine>/<name>" (e.g. "espeak-ng/English (Great Britain)").
    public var id: String { ownID ?? engine + "/" + name }
    public let name: String
    /// BCP-47 as the engine reports it, e.g. "en-gb"; compare case-insensitively.
    public var language: String
    public var variant: String
    /// The speech-dispatcher output module, e.g. "espeak-ng".
    public let engine: String
    /// The id where it is not "<engine>/<name>". Kept apart only then: the service holds
    /// thousands of voices, and an id string of each one's own is a visible part of its memory.
    private let ownID: String?

    public init(id: String, name: String, language: String, variant: String, engine: String) {
        ownID = id == engine + "/" + name ? nil : id
        self.name = name
        self.language = language
        self.variant = variant
        self.engine = engine
    }

    public static func < (a: Voice, b: Voice) -> Bool { a.id < b.id }
}

/// One voice as ListVoices gives it: `(sssss)` — id, name, language, variant, engine.
extension Voice: BusArgument {
    public static var busType: DBusType { .structure([.string, .string, .string, .string, .string]) }

    public init(busValue: DBusValue) throws(DBusError) {
        guard case .structure(let fields) = busValue, fields.count == 5,
              case .string(let id) = fields[0], case .string(let name) = fields[1], case .string(let language) = fields[2],
              case .string(let variant) = fields[3], case .string(let engine) = fields[4] else {
            throw .invalidArgs("expected a voice (sssss), got \(busValue.type)")
        }
        self.init(id: id, name: name, language: language, variant: variant, engine: engine)
    }

    public var busValue: DBusValue {
        .structure([.string(id), .string(name), .string(language), .string(variant), .string(engine)])
    }
}
