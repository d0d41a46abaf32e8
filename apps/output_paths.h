// Output paths checked before any work starts, so that a run never trains for an hour and
// then finds that it cannot write its results. Each check throws duet::Error naming the
// flag, the path and the reason.
#pragma once

#include <string>

namespace duet::apps {

// How the file will be written: opened and overwritten (or appended to), or written to a
// temporary file beside it and renamed over it (checkpoints), which needs a folder that takes
// new files even when the file exists.
enum class WriteMode { in_place, by_rename };

// A file can be written at `path`. Nothing is left behind, and an existing file is not changed.
void check_output_file(const std::string& flag, const std::string& path, WriteMode mode = WriteMode::in_place);

// The file system takes `path` as a name: not empty, its file name within the folder's NAME_MAX
// (255 bytes on most) and the whole within PATH_MAX. For the names duet derives from an output
// (a checkpoint's partial file, its .best copy), which are longer than the name the user gave.
void check_name_fits(const std::string& flag, const std::string& path);

// `path` is a folder that takes new files; created, with its parents, if missing.
void prepare_output_folder(const std::string& flag, const std::string& path);

// gnuplot, which draws the PNG plots, is on the PATH; `what` names the plots, `alternative`
// (if any) says how to do without them.
void check_gnuplot(const std::string& what, const std::string& alternative = "");

}  // namespace duet::apps
