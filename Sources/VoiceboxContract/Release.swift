/// Voicebox's version: the service's Version property and the client's `--version`
/// (scripts/package checks that debian/changelog says the same).
public enum Release {
    public static let version = "0.2.0"
}
