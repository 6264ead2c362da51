import Glibc

/// The interfaces a Wayland compositor offers its clients, asked on its socket with the core
/// protocol itself (wl_display.get_registry, then wl_display.sync: every wl_registry.global comes
/// before the sync's done). Whether `zwp_virtual_keyboard_manager_v1` is among them is what decides
/// whether wtype can type, whatever the session calls itself. Bounded by `wait` in all.
enum WaylandGlobals {
    static let virtualKeyboard = "zwp_virtual_keyboard_manager_v1"
    static let wait: Duration = .seconds(2)

    /// The global interfaces' names, or nil when the compositor cannot be asked.
    static func list(_ environment: [String: String]) -> Set<String>? {
        guard let display = environment["WAYLAND_DISPLAY"], !display.isEmpty else { return nil }
        let path = display.hasPrefix("/") ? display : (environment["XDG_RUNTIME_DIR"] ?? "") + "/" + display
        let socketDescriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socketDescriptor >= 0 else { return nil }
        defer { close(socketDescriptor) }
        guard connect(socketDescriptor, path: path) else { return nil }
        // Object 1 is wl_display: get_registry (opcode 1, new id 2), sync (opcode 0, new id 3).
        let request = message(object: 1, opcode: 1, [2]) + message(object: 1, opcode: 0, [3])
        guard request.withUnsafeBytes({ send(socketDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return nil
        }
        var received: [UInt8] = [], globals: Set<String> = []
        let deadline = ContinuousClock.now + wait
        while ContinuousClock.now < deadline {
            var watched = pollfd(fd: socketDescriptor, events: Int16(POLLIN), revents: 0)
            let left = deadline - ContinuousClock.now
            guard poll(&watched, 1, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1) > 0 else {
                continue
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(socketDescriptor, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            received += buffer[..<count]
            while let (object, opcode, body) = nextMessage(&received) {
                if object == 3 { return globals }  // wl_callback.done: every global was sent before it
                if object == 2, opcode == 0, let name = globalInterface(body) { globals.insert(name) }
            }
        }
        return nil
    }

    private static func connect(_ descriptor: Int32, path: String) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    /// A request: the object, (size << 16 | opcode), then 32-bit arguments, in host byte order.
    private static func message(object: UInt32, opcode: UInt16, _ arguments: [UInt32]) -> [UInt8] {
        let words = [object, UInt32(8 + 4 * arguments.count) << 16 | UInt32(opcode)] + arguments
        return words.flatMap { word in withUnsafeBytes(of: word) { Array($0) } }
    }

    private static func word(_ bytes: ArraySlice<UInt8>, at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes[(bytes.startIndex + offset)..<(bytes.startIndex + offset + 4)]) }
        return value
    }

    private static func nextMessage(_ buffer: inout [UInt8]) -> (UInt32, UInt16, ArraySlice<UInt8>)? {
        guard buffer.count >= 8 else { return nil }
        let header = word(buffer[...], at: 4)
        let size = Int(header >> 16)
        guard size >= 8, buffer.count >= size else { return nil }
        let message = (word(buffer[...], at: 0), UInt16(header & 0xFFFF), buffer[8..<size])
        buffer.removeFirst(size)
        return message
    }

    /// wl_registry.global(name: uint, interface: string, version: uint): a string is its length
    /// (with the NUL) and its bytes, padded to 32 bits.
    static func globalInterface(_ body: ArraySlice<UInt8>) -> String? {
        guard body.count >= 8 else { return nil }
        let length = Int(word(body, at: 4))
        guard length >= 1, body.count >= 8 + length else { return nil }
        let start = body.startIndex + 8
        return String(decoding: body[start..<(start + length - 1)], as: UTF8.self)
    }
}
