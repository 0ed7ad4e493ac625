// swift-tools-version: 6.1
import PackageDescription

// A small agent on coaty-edge's library products: a controller that follows a shared object's data (set by any
// agent) and falls back to a safe state while the object's host is gone.
let package = Package(
    name: "SharedObjectWatcher",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "coaty-edge", path: "../..")],
    targets: [
        .target(
            name: "Ventilation",
            dependencies: [
                .product(name: "CoatyCore", package: "coaty-edge"),
                .product(name: "CoatySharedObjects", package: "coaty-edge"),
            ]),
        .executableTarget(
            name: "ventilation-agent",
            dependencies: [
                "Ventilation", .product(name: "CoatyCore", package: "coaty-edge"),
                .product(name: "CoatySharedObjects", package: "coaty-edge"),
            ]),
        .testTarget(
            name: "VentilationTests",
            dependencies: [
                "Ventilation", .product(name: "CoatyCore", package: "coaty-edge"),
                .product(name: "CoatySharedObjects", package: "coaty-edge"),
                .product(name: "CoatyTesting", package: "coaty-edge"),
            ]),
    ]
)
