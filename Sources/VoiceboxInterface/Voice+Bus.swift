import VoiceboxBus
import VoiceboxCore

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
