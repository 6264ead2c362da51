/// Codable values to JSON text and back, in the shape Foundation's JSONEncoder and JSONDecoder
/// give with their default strategies (a journal written by either reads with the other), for
/// the service's one JSON file: voiceboxd links no Foundation.
public enum JSON {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let root = TreeNode()
        try value.encode(to: TreeEncoder(node: root, codingPath: []))
        return Array(root.value.text.utf8)
    }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try T(from: TreeDecoder(value: try JSONValue(parsing: bytes), codingPath: []))
    }
}

// MARK: - Encoding

/// A value being built: containers hand out children and fill them in later.
private final class TreeNode {
    enum Content { case unset, value(JSONValue), array([TreeNode]), object([String: TreeNode]) }
    var content = Content.unset

    var value: JSONValue {
        switch content {
        case .unset: .object([:])  // an Encodable that encoded nothing, as Foundation writes it
        case .value(let value): value
        case .array(let items): .array(items.map(\.value))
        case .object(let members): .object(members.mapValues(\.value))
        }
    }

    func child(at key: String) -> TreeNode {
        let node = TreeNode()
        if case .object(var members) = content {
            members[key] = node
            content = .object(members)
        } else {
            content = .object([key: node])
        }
        return node
    }

    func appendChild() -> TreeNode {
        let node = TreeNode()
        if case .array(var items) = content {
            items.append(node)
            content = .array(items)
        } else {
            content = .array([node])
        }
        return node
    }
}

private struct TreeEncoder: Encoder {
    let node: TreeNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = node.content {} else { node.content = .object([:]) }
        return KeyedEncodingContainer(KeyedWriter<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = node.content {} else { node.content = .array([]) }
        return UnkeyedWriter(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleWriter(node: node, codingPath: codingPath)
    }
}

/// What every container does with one value: primitives become leaves, the rest encode
/// themselves into the node.
private func write<T: Encodable>(_ value: T, into node: TreeNode, path: [any CodingKey]) throws {
    switch value {
    case let value as String: node.content = .value(.string(value))
    case let value as Bool: node.content = .value(.bool(value))
    case let value as Double:
        guard value.isFinite else { throw EncodingError.invalidValue(value, .init(codingPath: path, debugDescription: "not a finite number")) }
        node.content = .value(.number(value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"))
    case let value as Float: try write(Double(value), into: node, path: path)
    case let value as any BinaryInteger: node.content = .value(.number("\(value)"))
    default: try value.encode(to: TreeEncoder(node: node, codingPath: path))
    }
}

private struct KeyedWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: TreeNode
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { node.child(at: key.stringValue).content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try write(value, into: node.child(at: key.stringValue), path: codingPath + [key])
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey> {
        TreeEncoder(node: node.child(at: key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        TreeEncoder(node: node.child(at: key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder {
        TreeEncoder(node: node.child(at: "super"), codingPath: codingPath)
    }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        TreeEncoder(node: node.child(at: key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedWriter: UnkeyedEncodingContainer {
    let node: TreeNode
    let codingPath: [any CodingKey]
    var count: Int {
        if case .array(let items) = node.content { return items.count }
        return 0
    }

    mutating func encodeNil() throws { node.appendChild().content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try write(value, into: node.appendChild(), path: codingPath + [IndexKey(count)])
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        TreeEncoder(node: node.appendChild(), codingPath: codingPath + [IndexKey(count)]).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        TreeEncoder(node: node.appendChild(), codingPath: codingPath + [IndexKey(count)]).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder {
        TreeEncoder(node: node.appendChild(), codingPath: codingPath + [IndexKey(count)])
    }
}

private struct SingleWriter: SingleValueEncodingContainer {
    let node: TreeNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try write(value, into: node, path: codingPath) }
}

private struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

// MARK: - Decoding

private struct TreeDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: String].self, value, codingPath) }
        return KeyedDecodingContainer(KeyedReader<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw mismatch([String].self, value, codingPath) }
        return UnkeyedReader(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleReader(value: value, codingPath: codingPath)
    }
}

private func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
    .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), found \(value.text.prefix(40))"))
}

/// What every container does with one value: primitives from leaves, the rest decode
/// themselves from the value.
private func read<T: Decodable>(_ type: T.Type, from value: JSONValue, path: [any CodingKey]) throws -> T {
    switch type {
    case is String.Type:
        guard case .string(let text) = value else { throw mismatch(type, value, path) }
        return text as! T
    case is Bool.Type:
        guard case .bool(let flag) = value else { throw mismatch(type, value, path) }
        return flag as! T
    case is Double.Type:
        guard case .number(let text) = value, let number = Double(text) else { throw mismatch(type, value, path) }
        return number as! T
    case is Float.Type:
        guard case .number(let text) = value, let number = Float(text) else { throw mismatch(type, value, path) }
        return number as! T
    case let integer as any (BinaryInteger & LosslessStringConvertible).Type:
        guard case .number(let text) = value else { throw mismatch(type, value, path) }
        // Foundation reads 3.0 as an Int; so do we, but never 3.5 or a number out of range.
        if let exact = integer.init(text) { return exact as! T }
        guard let number = Double(text), let exact = integer.init(exactly: number) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "\(text) is not a \(type)"))
        }
        return exact as! T
    default:
        return try T(from: TreeDecoder(value: value, codingPath: path))
    }
}

private struct KeyedReader<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]
    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no \(key.stringValue)"))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try read(type, from: try member(key), path: codingPath + [key])
    }
    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey> {
        try TreeDecoder(value: try member(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try TreeDecoder(value: try member(key), codingPath: codingPath + [key]).unkeyedContainer()
    }
    func superDecoder() throws -> any Decoder {
        TreeDecoder(value: members["super"] ?? .null, codingPath: codingPath)
    }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        TreeDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedReader: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(items: [JSONValue], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    private mutating func next() throws -> (JSONValue, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "the array has ended"))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, path) = try next()
        return try read(type, from: value, path: path)
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (value, path) = try next()
        return try TreeDecoder(value: value, codingPath: path).container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (value, path) = try next()
        return try TreeDecoder(value: value, codingPath: path).unkeyedContainer()
    }
    mutating func superDecoder() throws -> any Decoder {
        let (value, path) = try next()
        return TreeDecoder(value: value, codingPath: path)
    }
}

private struct SingleReader: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try read(type, from: value, path: codingPath) }
}
