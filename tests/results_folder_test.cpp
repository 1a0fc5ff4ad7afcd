// sim/harness/results_folder.h without the binary: where a filesystem cannot exchange folders, a
// writer killed between its two renames leaves OUT missing and the old results set aside;
// the next writer, whose lock made OUT again (empty but for the lock file), puts them back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sim/harness/results_folder.h"

namespace fs = std::filesystem;

namespace {

TEST(ResultsFolder, TheNextWriterPutsBackWhatATwoStepSwitchSetAside) {
    const fs::path parent = fs::temp_directory_path() / ("lockbench-folder-" + std::to_string(::getpid()));
    fs::remove_all(parent);
    const fs::path out = parent / "out";
    const fs::path aside = parent / ".out.replaced.1.0";
    fs::create_directories(aside / "runs");
    std::ofstream(aside / "summary.json") << "{\"runs\": []}\n";

    lockbench::FolderLock lock(out, true);  // makes OUT, empty but for its lock file
    const fs::path staging = lockbench::make_staging(out);
    EXPECT_TRUE(fs::is_regular_file(out / "summary.json")) << "the only complete copy was not put back";
    EXPECT_TRUE(fs::is_directory(out / "runs"));
    EXPECT_FALSE(fs::exists(aside));
    EXPECT_TRUE(fs::exists(out / ".lockbench.lock")) << "the writer's lock file went with the empty folder";
    EXPECT_TRUE(fs::is_directory(staging));
    fs::remove_all(parent);
}

// A refused command leaves no trace: its lock gone from a folder that was there, and the
// folders it made (all of a/b/c, not only c) gone when nothing was written into them. A folder
// written into keeps what was written.
TEST(ResultsFolder, ALockLeavesNoTraceOfItselfOrOfTheFoldersItMadeEmpty) {
    const fs::path parent = fs::temp_directory_path() / ("lockbench-trace-" + std::to_string(::getpid()));
    fs::remove_all(parent);
    fs::create_directories(parent / "there");
    {
        lockbench::FolderLock lock(parent / "there", true);
        EXPECT_TRUE(fs::exists(parent / "there" / ".lockbench.lock"));
    }
    EXPECT_FALSE(fs::exists(parent / "there" / ".lockbench.lock"));
    EXPECT_TRUE(fs::is_directory(parent / "there"));
    {
        lockbench::FolderLock lock(parent / "a" / "b" / "c", true);
        EXPECT_TRUE(fs::is_directory(parent / "a" / "b" / "c"));
    }
    EXPECT_FALSE(fs::exists(parent / "a"));
    {
        lockbench::FolderLock lock(parent / "d" / "e", true);
        std::ofstream(parent / "d" / "e" / "summary.json") << "{}\n";
    }
    EXPECT_TRUE(fs::is_regular_file(parent / "d" / "e" / "summary.json"));
    EXPECT_FALSE(fs::exists(parent / "d" / "e" / ".lockbench.lock"));
    // A lock file that was there before (another tool's, an older lockbench's) stays.
    std::ofstream(parent / "there" / ".lockbench.lock") << "1\n";
    { lockbench::FolderLock lock(parent / "there", true); }
    EXPECT_TRUE(fs::exists(parent / "there" / ".lockbench.lock"));
    fs::remove_all(parent);
}

}  // namespace
