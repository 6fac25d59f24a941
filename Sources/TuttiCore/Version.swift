/// The release, as `--version` prints it and `scripts/package.sh` names the packages.
public enum TuttiVersion {
    public static let current = "0.13.0"
}
