import VoiceboxContract

/// org.freedesktop.DBus.Introspectable's XML, generated from the interface descriptions.
public enum Introspection {
    static let standardInterfaces: [InterfaceDescription] = [
        InterfaceDescription(name: "org.freedesktop.DBus.Peer", methods: [
            .init("Ping"),
            .init("GetMachineId", out: [.init("machine_uuid", "s")]),
        ]),
        InterfaceDescription(name: "org.freedesktop.DBus.Introspectable", methods: [
            .init("Introspect", out: [.init("xml_data", "s")]),
        ]),
        InterfaceDescription(name: "org.freedesktop.DBus.Properties", methods: [
            .init("Get", in: [.init("interface_name", "s"), .init("property_name", "s")], out: [.init("value", "v")]),
            .init("GetAll", in: [.init("interface_name", "s")], out: [.init("props", "a{sv}")]),
            .init("Set", in: [.init("interface_name", "s"), .init("property_name", "s"), .init("value", "v")]),
        ], signals: [
            .init("PropertiesChanged", [.init("interface_name", "s"), .init("changed_properties", "a{sv}"),
                                        .init("invalidated_properties", "as")]),
        ]),
    ]

    public static func xml(interfaces: [InterfaceDescription], children: [String] = []) -> String {
        var out = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>

        """
        let all = interfaces.isEmpty ? [] : standardInterfaces + interfaces
        for interface in all { out += xml(interface) }
        for child in children { out += " <node name=\"\(escape(child))\"/>\n" }
        out += "</node>\n"
        return out
    }

    /// One `<interface>` element, as it also stands in dbus/*.xml.
    public static func xml(_ interface: InterfaceDescription) -> String {
        var out = " <interface name=\"\(escape(interface.name))\">\n"
        for method in interface.methods {
            out += comment(method.summary)
            out += "  <method name=\"\(method.name)\">\n"
            for arg in method.inputs { out += "   <arg name=\"\(arg.name)\" type=\"\(arg.type)\" direction=\"in\"/>\n" }
            for arg in method.outputs { out += "   <arg name=\"\(arg.name)\" type=\"\(arg.type)\" direction=\"out\"/>\n" }
            out += "  </method>\n"
        }
        for signal in interface.signals {
            out += comment(signal.summary)
            out += "  <signal name=\"\(signal.name)\">\n"
            for arg in signal.arguments { out += "   <arg name=\"\(arg.name)\" type=\"\(arg.type)\"/>\n" }
            out += "  </signal>\n"
        }
        for property in interface.properties {
            out += comment(property.summary)
            out += "  <property name=\"\(property.name)\" type=\"\(property.type)\" access=\"read\">\n"
            if !property.emitsChanged {
                out += "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"false\"/>\n"
            }
            out += "  </property>\n"
        }
        out += " </interface>\n"
        return out
    }

    /// Direct children of `path` that lead to exported objects.
    static func children(of path: String, among exported: some Sequence<String>) -> [String] {
        let prefix = path == "/" ? "/" : path + "/"
        var names = Set<String>()
        for object in exported where object.hasPrefix(prefix) && object != path {
            if let first = object.dropFirst(prefix.count).split(separator: "/").first { names.insert(String(first)) }
        }
        return names.sorted()
    }

    private static func comment(_ summary: String) -> String {
        guard !summary.isEmpty else { return "" }
        // "--" may not appear inside an XML comment.
        var text = ""
        for character in summary {
            if character == "-", text.last == "-" { text += " " }
            text.append(character)
        }
        return "  <!-- \(text) -->\n"
    }

    private static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "\"": out += "&quot;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.append(character)
            }
        }
        return out
    }
}
