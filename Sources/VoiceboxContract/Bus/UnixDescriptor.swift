/// `h`: a unix file descriptor passed with the message. Received, it is the call's (valid until the
/// call is answered: the receiver duplicates what it keeps); sent, marshalling duplicates it.
public struct UnixDescriptor: BusArgument, Equatable {
    public var descriptor: Int32

    public init(_ descriptor: Int32) { self.descriptor = descriptor }

    public static var busType: DBusType { .unixFD }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .unixFD(let fd) = busValue else { throw Self.mismatch(busValue) }
        descriptor = fd
    }
    public var busValue: DBusValue { .unixFD(descriptor) }
}
