import VoiceboxBus
import VoiceboxContract

/// IBus's objects as they travel on its bus (libibus's IBusSerializable): a struct whose first
/// field is the type's name and the second its attachments (a{sv}), then the type's own fields in
/// order, wrapped in a variant wherever a method or signal takes one.
enum IBusValues {
    /// The engine's name as IBus knows it. One name for every run: the daemon remembers per engine
    /// name whether it takes FocusInId (which names the client), after asking once.
    static let engineName = "voicebox"
    static let componentName = "org.voicebox.Dictation"

    /// IBusText `(sa{sv}sv)`: the text and an empty IBusAttrList `(sa{sv}av)`.
    static func text(_ text: String) -> DBusValue {
        let attributes = DBusValue.structure([.string("IBusAttrList"), .vardict([:]), .array(.variant, [])])
        return .structure([.string("IBusText"), .vardict([:]), .string(text), .variant(attributes)])
    }

    /// The string of an IBusText (as SetSurroundingText sends it), nil for anything else.
    static func string(ofText value: DBusValue) -> String? {
        guard case .structure(let fields) = value.unwrapped, fields.count >= 3, fields[0].string == "IBusText" else { return nil }
        return fields[2].string
    }

    /// IBusEngineDesc: name, long name, description, language, license, author, icon, layout,
    /// rank (u), hotkeys, symbol, setup, layout variant, layout option, version, text domain,
    /// icon property key (ibus 1.5.27 reads the last five only when present). No layout: the
    /// daemon then translates no key codes for it, and the compositor's layout stays as it is.
    static func engineDescription() -> DBusValue {
        let strings = [engineName, "Voicebox dictation", "Types dictated text into the focused field, then hands the keyboard back",
                       "", "GPL-3.0-or-later", "Voicebox", "", ""]
        let tail = ["", "", "", "", "", "1", "", ""]
        return .structure([.string("IBusEngineDesc"), .vardict([:])] + strings.map { .string($0) } + [.uint32(0)]
                          + tail.map { .string($0) })
    }

    /// IBusComponent: name, description, version, license, author, homepage, command, text domain,
    /// observed paths (av), engines (av). No command: the engine lives in this process, and the
    /// daemon drops the component (and its engine) when this connection closes.
    static func component() -> DBusValue {
        let strings = [componentName, "Voicebox dictation", "1", "GPL-3.0-or-later", "Voicebox", "", "", ""]
        return .structure([.string("IBusComponent"), .vardict([:])] + strings.map { .string($0) }
                          + [.array(.variant, []), .array(.variant, [.variant(engineDescription())])])
    }

    /// The name of the IBusEngineDesc that GlobalEngine answers (a variant holding the struct).
    static func engineName(ofDescription value: DBusValue) -> String? {
        var value = value
        while case .variant(let inner) = value { value = inner }
        guard case .structure(let fields) = value, fields.count > 2, fields[0].string == "IBusEngineDesc" else { return nil }
        return fields[2].string
    }
}

/// The IBus capability bits a client's input context declares (libibus's IBusCapabilite).
struct IBusCapabilities: OptionSet, Sendable {
    let rawValue: UInt32
    static let preeditText = IBusCapabilities(rawValue: 1 << 0)
    static let focus = IBusCapabilities(rawValue: 1 << 3)
    static let surroundingText = IBusCapabilities(rawValue: 1 << 5)
}
