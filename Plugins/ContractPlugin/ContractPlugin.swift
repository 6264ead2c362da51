import Foundation
import PackagePlugin

/// Generates the Swift declarations of each interface in dbus/*.xml at build time (the XML is the
/// one source of the bus contract; ContractGenerator reads it), into the target it is applied to.
@main
struct ContractPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let generator = try context.tool(named: "ContractGenerator")
        let dbus = context.package.directoryURL.appending(path: "dbus")
        let files = try FileManager.default.contentsOfDirectory(atPath: dbus.path(percentEncoded: false)).filter { $0.hasSuffix(".xml") }.sorted()
        return files.map { name in
            let input = dbus.appending(path: name)
            let output = context.pluginWorkDirectoryURL.appending(path: name.dropLast(".xml".count) + ".swift")
            return .buildCommand(displayName: "Generating Swift from dbus/\(name)", executable: generator.url,
                                 arguments: [input.path(percentEncoded: false), output.path(percentEncoded: false)], inputFiles: [input], outputFiles: [output])
        }
    }
}
