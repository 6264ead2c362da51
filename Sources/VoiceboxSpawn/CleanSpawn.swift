import Glibc

/// The earlier entry points, kept so that code written against them still builds; both go
/// through `Spawn` and `Child`. New code uses those.
public enum CleanSpawn {
    /// posix_spawn(p) with a clean signal state and the caller's file actions; the child's pid.
    /// The caller reaps it. Prefer `Spawn.start`, whose `Child` reaps and decodes the end.
    public static func spawn(_ path: String, _ arguments: [String], actions: UnsafePointer<posix_spawn_file_actions_t>?,
                             environment: [String]? = nil, searchPath: Bool = false) -> Result<pid_t, Errno> {
        var spec = ChildSpec(path, arguments, environment: environment)
        spec.searchPath = searchPath
        return Spawn.spawnWithActions(spec, actions: actions)
    }
}
