/// One voice as a Spiel speech provider offers it (org.freedesktop.Speech.Provider's `Voices`,
/// `a(ssstas)`): a name for people, the id Synthesize takes, the output format as GStreamer caps,
/// the feature flags (`SpielFeatures`) and its languages (BCP-47, lower case, the language itself
/// and then each shorter prefix, as other providers list them: libspiel matches them exactly).
public struct ProviderVoice: Sendable, Hashable {
    public var name: String
    public var id: String
    public var outputFormat: String
    public var features: UInt64
    public var languages: [String]

    public init(name: String, id: String, outputFormat: String, features: UInt64, languages: [String]) {
        self.name = name
        self.id = id
        self.outputFormat = outputFormat
        self.features = features
        self.languages = languages
    }
}

/// `(ssstas)`: name, id, output format, features, languages.
extension ProviderVoice: BusArgument {
    public static var busType: DBusType { .structure([.string, .string, .string, .uint64, .array(.string)]) }

    public init(busValue: DBusValue) throws(DBusError) {
        guard case .structure(let fields) = busValue, fields.count == 5, case .string(let name) = fields[0],
              case .string(let id) = fields[1], case .string(let format) = fields[2], case .uint64(let features) = fields[3] else {
            throw .invalidArgs("expected a voice (ssstas), got \(busValue.type)")
        }
        self.init(name: name, id: id, outputFormat: format, features: features, languages: try [String](busValue: fields[4]))
    }

    public var busValue: DBusValue {
        .structure([.string(name), .string(id), .string(outputFormat), .uint64(features), .stringArray(languages)])
    }
}
