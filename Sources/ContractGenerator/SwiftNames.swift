/// How the XML's names and D-Bus types are spelled in the generated Swift.
enum SwiftNames {
    /// The interface's name without its owner's reversed domain: org.voicebox.Speech1 → Speech1,
    /// org.freedesktop.Speech.Provider → SpeechProvider.
    static func type(ofInterface name: String) -> String {
        name.split(separator: ".").dropFirst(2).joined()
    }

    /// A member's name with its first letter made lower case: GetAll → getAll, MachineID → machineID.
    static func member(_ name: String) -> String {
        escaped(name.prefix(1).lowercased() + name.dropFirst())
    }

    /// An argument's name in lower camel case: pipe_fd → pipeFd.
    static func argument(_ name: String) -> String {
        let words = name.split(separator: "_")
        guard let first = words.first else { return name }
        return escaped(first.lowercased() + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined())
    }

    /// An error's name, as a member's.
    static func errorCase(_ name: String) -> String { member(name) }

    /// The Swift type a value of `signature` travels as, where the signature alone says it (else
    /// the XML names it: org.voicebox.SwiftType).
    static func type(of signature: String) -> String? {
        switch signature {
        case "s": "String"
        case "b": "Bool"
        case "i": "Int32"
        case "u": "UInt32"
        case "t": "UInt64"
        case "d": "Double"
        case "h": "UnixDescriptor"
        case "o": "ObjectPath"
        case "v": "Variant"
        case "a{sv}": "VarDict"
        case _ where signature.hasPrefix("a"): type(of: String(signature.dropFirst())).map { "[\($0)]" }
        default: nil
        }
    }

    /// A Swift string literal.
    static func literal(_ text: String) -> String {
        var out = "\""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out + "\""
    }

    private static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "func", "import", "init", "inout", "let", "operator",
        "protocol", "static", "struct", "subscript", "typealias", "var", "break", "case", "continue", "default", "defer",
        "do", "else", "for", "guard", "if", "in", "repeat", "return", "switch", "where", "while", "as", "catch", "false",
        "is", "nil", "self", "Self", "super", "throw", "throws", "true", "try", "internal", "public", "private",
    ]

    private static func escaped(_ name: String) -> String { keywords.contains(name) ? "`\(name)`" : name }
}
