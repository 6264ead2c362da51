/// The part of org.freedesktop.Notifications (the Desktop Notifications Specification) that
/// voiceboxd calls: one notification shown while a recording lasts, closed when it ends.
public enum DesktopNotifications: BusInterface {
    public static let busName = "org.freedesktop.Notifications"
    public static let objectPath = "/org/freedesktop/Notifications"
    public static let interfaceName = "org.freedesktop.Notifications"

    public static let notify = BusMethod(
        "Notify", "Show a notification; returns its id.",
        in: ("app_name", String.self), ("replaces_id", UInt32.self), ("app_icon", String.self), ("summary", String.self),
        ("body", String.self), ("actions", [String].self), ("hints", VarDict.self), ("expire_timeout", Int32.self),
        out: ("id", UInt32.self))
    public static let closeNotification = BusMethod(
        "CloseNotification", "Take a notification away.", in: ("id", UInt32.self))

    public static let interface = InterfaceDescription(name: interfaceName,
                                                      methods: [notify.description, closeNotification.description])
}
