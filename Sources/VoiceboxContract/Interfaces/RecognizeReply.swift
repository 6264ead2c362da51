/// Recognize's reply: the words heard and the details (see the contract for the keys).
public struct RecognizeReply: BusReply, Equatable {
    public var text: String
    public var details: VarDict

    public init(text: String, details: VarDict) {
        self.text = text
        self.details = details
    }

    public static var busTypes: [DBusType] { [String.busType, VarDict.busType] }

    public init(busValues: [DBusValue]) throws(DBusError) {
        guard busValues.count == 2 else { throw .invalidArgs("Recognize replies with (s, a{sv})") }
        text = try String(busValue: busValues[0])
        details = try VarDict(busValue: busValues[1])
    }

    public var busValues: [DBusValue] { [text.busValue, details.busValue] }
}
