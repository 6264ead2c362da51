/// An interface served at a well-known name and object path (a client's `BusProxy` is made from them).
public protocol BusInterface {
    static var busName: String { get }
    static var objectPath: String { get }
    static var interfaceName: String { get }
}
