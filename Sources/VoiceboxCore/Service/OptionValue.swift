/// An option's value as the caller sent it, with the bus's types reduced to what options use.
public enum OptionValue: Sendable, Equatable {
    case string(String)
    case double(Double)
    case bool(Bool)
    case strings([String])
    case uint32(UInt32)
    /// A unix descriptor (`h`), open for the length of the call.
    case descriptor(Int32)
    /// Any other D-Bus type, by its signature: always refused, but named in the error.
    case other(signature: String)

    var typeName: String {
        switch self {
        case .string: "s"
        case .double: "d"
        case .bool: "b"
        case .strings: "as"
        case .uint32: "u"
        case .descriptor: "h"
        case .other(let signature): signature
        }
    }
}
