#include "core/asm/lower.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/error_site.h"
#include "core/ops.h"
#include "core/status_macros.h"
#include "core/unified_buffer.h"

namespace ptoserve {
namespace pasm {

namespace {

absl::Status ErrorAt(SourcePos pos, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(ToString(pos), ": ", message));
}

// `status` with "line:column: " in front of its message.
absl::Status Prefixed(SourcePos pos, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(ToString(pos), ": ", status.message()));
}

// The first key of `type` that `desc` disagrees with, as "says K=V but tile
// \"name\" <has what>"; nullopt if they agree.
std::optional<std::string> Disagreement(const TileBufType& type,
                                        const TileDesc& desc,
                                        absl::string_view name) {
  const std::string tile = absl::StrFormat("tile \"%s\"", name);
  if (type.loc && *type.loc != desc.location) {
    return absl::StrCat("says loc=", LocationName(*type.loc), " but ", tile,
                        " is in ", LocationName(desc.location));
  }
  if (type.dtype && !Describes(*type.dtype, desc.dtype)) {
    return absl::StrCat("says dtype=", ElementTypeName(*type.dtype), " but ",
                        tile, " is ", DTypeName(desc.dtype));
  }
  const struct {
    const char* key;
    std::optional<uint32_t> says;
    uint32_t has;
  } sizes[] = {
      {"rows", type.rows, desc.rows},
      {"cols", type.cols, desc.cols},
      {"v_row", type.v_row ? type.v_row->value : std::nullopt, desc.valid_rows},
      {"v_col", type.v_col ? type.v_col->value : std::nullopt, desc.valid_cols},
  };
  for (const auto& size : sizes) {
    if (size.says && *size.says != size.has) {
      return absl::StrCat("says ", size.key, "=", *size.says, " but ", tile,
                          " has ", size.key, "=", size.has);
    }
  }
  if (type.blayout && *type.blayout != desc.layout) {
    return absl::StrCat("says blayout=", LayoutName(*type.blayout), " but ",
                        tile, " is ", LayoutName(desc.layout));
  }
  if (type.slayout && *type.slayout != BoxLayout::kNoneBox) {
    return absl::StrCat("says slayout=", BoxLayoutName(*type.slayout), " but ",
                        tile, " is not boxed (slayout=none_box)");
  }
  return std::nullopt;
}

// What the lowering knows about a tile.
struct KnownTile {
  TileDesc desc;
  std::optional<SourcePos> defined_at;  // nullopt: a tile of the request
};

class Lowerer {
 public:
  Lowerer(const Program& program, JobSpec base, const Engine& engine)
      : program_(program),
        target_(engine.options().TargetOf(base.target)),
        backend_(engine.backends().Get(target_)),
        max_tile_bytes_(engine.options().limits.max_tile_bytes) {
    job_ = std::move(base);
  }

  absl::StatusOr<JobSpec> Run() && {
    if (!job_.instructions.empty()) {
      return absl::InvalidArgumentError(
          "a job carries either assembly or instructions, not both");
    }
    PTO_RETURN_IF_ERROR(DeclareRequestTiles());
    CollectNames();
    PTO_RETURN_IF_ERROR(ApplyBindings());
    for (const Statement& statement : program_.statements) {
      if (const auto* op = std::get_if<Operation>(&statement.node)) {
        PTO_RETURN_IF_ERROR(LowerOperation(*op, statement.pos));
      }
    }
    return std::move(job_);
  }

 private:
  JobSpec& job() { return job_; }

  absl::Status DeclareRequestTiles() {
    for (const TileInput& in : job().tiles) {
      PTO_ASSIGN_OR_RETURN(TileDesc desc,
                           ResolveTileDesc(in.desc, in.name, max_tile_bytes_));
      known_.emplace(in.name, KnownTile{desc, std::nullopt});
    }
    return absl::OkStatus();
  }

  // Every name the text uses, and where the program first writes each tile
  // it writes.
  void CollectNames() {
    for (const Statement& statement : program_.statements) {
      if (const auto* op = std::get_if<Operation>(&statement.node)) {
        used_names_.insert(op->dst.name);
        for (const ValueRef* operand : Sources(*op)) {
          used_names_.insert(operand->name);
        }
        written_at_.emplace(op->dst.name, op->dst.pos);
        if (op->tmp) {
          used_names_.insert(op->tmp->name);
          written_at_.emplace(op->tmp->name, op->tmp->pos);
        }
      } else if (const auto* binding = std::get_if<Binding>(&statement.node)) {
        used_names_.insert(binding->tile);
      }
    }
  }

  absl::Status ApplyBindings() {
    absl::flat_hash_map<std::string, SourcePos> bound_at;
    for (const Statement& statement : program_.statements) {
      const auto* binding = std::get_if<Binding>(&statement.node);
      if (binding == nullptr) continue;
      const std::string& name = binding->tile;
      if (!known_.contains(name) && !written_at_.contains(name)) {
        return ErrorAt(binding->tile_pos,
                       absl::StrFormat("pto.tassign binds %%%s, which is "
                                       "neither a tile of the request nor "
                                       "written by the program",
                                       name));
      }
      if (auto [it, inserted] = bound_at.emplace(name, binding->tile_pos);
          !inserted) {
        return ErrorAt(
            binding->tile_pos,
            absl::StrFormat("%%%s is already bound to 0x%x at %s; a "
                            "tile has one address for the whole "
                            "program",
                            name, addresses_[name], ToString(it->second)));
      }
      addresses_[name] = binding->address;
    }
    if (addresses_.empty()) return absl::OkStatus();
    job().mode = Mode::kManual;
    for (TileInput& in : job().tiles) {
      if (auto it = addresses_.find(in.name); it != addresses_.end()) {
        in.desc.address = it->second;
        known_.at(in.name).desc.address = it->second;
      }
    }
    return absl::OkStatus();
  }

  // The tile a source operand reads.
  absl::StatusOr<TileDesc> Source(const ValueRef& operand) const {
    if (auto it = known_.find(operand.name); it != known_.end()) {
      PTO_RETURN_IF_ERROR(CheckType(operand, it->second.desc));
      return it->second.desc;
    }
    std::string message = absl::StrFormat(
        "%%%s is neither a tile of the request nor defined by an earlier "
        "instruction",
        operand.name);
    if (auto it = written_at_.find(operand.name); it != written_at_.end()) {
      absl::StrAppend(&message, "; the program first writes it at ",
                      ToString(it->second));
    }
    return ErrorAt(operand.pos, message);
  }

  static absl::Status CheckType(const ValueRef& operand, const TileDesc& desc) {
    if (std::optional<std::string> problem =
            Disagreement(operand.type, desc, operand.name)) {
      return ErrorAt(operand.type.pos,
                     absl::StrCat("type of %", operand.name, " ", *problem));
    }
    return absl::OkStatus();
  }

  // A new tile shaped by `operand`'s type, taking what it leaves open from
  // `like`; placed where the program binds it.
  absl::StatusOr<TileDesc> NewTileDesc(const ValueRef& operand,
                                       const TileDesc& like) const {
    // As the engine allocates an undeclared dst.
    TileDesc desc = AllocatedLike(like);
    const TileBufType& type = operand.type;
    if (type.slayout && *type.slayout != BoxLayout::kNoneBox) {
      return ErrorAt(
          type.pos, absl::StrCat("type of %", operand.name,
                                 " says slayout=", BoxLayoutName(*type.slayout),
                                 "; tiles here are never boxed "
                                 "(slayout=none_box)"));
    }
    if (type.loc) desc.location = *type.loc;
    if (type.dtype) desc.dtype = ToDType(*type.dtype, like.dtype);
    if (type.rows) desc.rows = *type.rows;
    if (type.cols) desc.cols = *type.cols;
    if (type.v_row && type.v_row->value) desc.valid_rows = *type.v_row->value;
    if (type.v_col && type.v_col->value) desc.valid_cols = *type.v_col->value;
    if (type.blayout) desc.layout = *type.blayout;
    if (auto it = addresses_.find(operand.name); it != addresses_.end()) {
      desc.address = it->second;
    }
    absl::StatusOr<TileDesc> resolved =
        ResolveTileDesc(desc, operand.name, max_tile_bytes_);
    if (!resolved.ok()) return Prefixed(type.pos, resolved.status());
    return resolved;
  }

  // Adds tile `name` to the job, without elements.
  void Declare(const std::string& name, const TileDesc& desc, SourcePos pos) {
    TileInput in;
    in.name = name;
    in.desc = desc;
    job().tiles.push_back(std::move(in));
    known_.emplace(name, KnownTile{desc, pos});
  }

  // A tile name no request tile, program name or earlier scratch tile has:
  // "<dst>.tmp", else "<dst>.tmp2", ... Each dst's count goes on from where
  // its last scratch name stopped, so that many scratch tiles for one dst
  // cost linear time, not quadratic.
  std::string ScratchName(const std::string& dst) {
    int& n = next_scratch_[dst];
    std::string name = absl::StrCat(dst, ".tmp");
    if (n == 0 && !known_.contains(name) && !used_names_.contains(name)) {
      n = 2;
      return name;
    }
    n = std::max(n, 2);
    do {
      name = absl::StrCat(dst, ".tmp", n++);
    } while (known_.contains(name) || used_names_.contains(name));
    return name;
  }

  absl::Status LowerOperation(const Operation& op, SourcePos pos) {
    Instruction inst;
    inst.opcode = op.opcode;
    PTO_ASSIGN_OR_RETURN(const TileDesc src0, Source(op.src0));
    inst.src0 = op.src0.name;
    if (Op(op.opcode).sources == 2) {
      PTO_RETURN_IF_ERROR(Source(op.src1).status());
      inst.src1 = op.src1.name;
    }

    inst.dst = op.dst.name;
    if (auto it = known_.find(op.dst.name); it != known_.end()) {
      if (op.form != Form::kDps) {
        const std::string where =
            it->second.defined_at
                ? absl::StrCat("at ", ToString(*it->second.defined_at))
                : "by the request";
        return ErrorAt(
            op.dst.pos,
            absl::StrFormat("%%%s is already defined (%s); `%%%s = ...` "
                            "defines a new tile: to write into an existing "
                            "one use `pto.%s ins(...) outs(%%%s : ...)`",
                            op.dst.name, where, op.dst.name,
                            Op(op.opcode).mnemonic, op.dst.name));
      }
      PTO_RETURN_IF_ERROR(CheckType(op.dst, it->second.desc));
    } else {
      PTO_ASSIGN_OR_RETURN(TileDesc desc, NewTileDesc(op.dst, src0));
      Declare(op.dst.name, desc, op.dst.pos);
    }
    const TileDesc dst = known_.at(op.dst.name).desc;

    const bool uses_tmp = backend_.UsesTmp(op.opcode);
    if (op.tmp) {
      inst.tmp = op.tmp->name;
      if (auto it = known_.find(op.tmp->name); it != known_.end()) {
        PTO_RETURN_IF_ERROR(CheckType(*op.tmp, it->second.desc));
      } else if (uses_tmp) {
        PTO_ASSIGN_OR_RETURN(TileDesc desc, NewTileDesc(*op.tmp, dst));
        Declare(op.tmp->name, desc, op.tmp->pos);
      }
      // Else the engine notes that the target does not use it.
    } else if (uses_tmp) {
      inst.tmp = ScratchName(op.dst.name);
      TileDesc desc = dst;
      desc.address.reset();
      Declare(inst.tmp, desc, pos);
      inst.notes.push_back(ScratchNote(inst.tmp));
    }
    job().instructions.push_back(std::move(inst));
    return absl::OkStatus();
  }

  // The note for a scratch tmp the program does not name. In manual mode
  // the engine places it like any unbound tile; the event's operands say
  // where.
  std::string ScratchNote(absl::string_view name) const {
    return absl::StrFormat(
        "tmp \"%s\" allocated by the server, shaped like dst: the program "
        "names no tmp and %s computes TXOR through one",
        name, TargetName(target_));
  }

  const Program& program_;
  const Target target_;
  const Backend& backend_;
  const size_t max_tile_bytes_;
  JobSpec job_;
  absl::flat_hash_map<std::string, KnownTile> known_;
  absl::flat_hash_set<std::string> used_names_;
  absl::flat_hash_map<std::string, int> next_scratch_;  // by dst
  absl::flat_hash_map<std::string, SourcePos> written_at_;
  absl::flat_hash_map<std::string, uint64_t> addresses_;
};

// The position of the `index`-th operation, if there is one.
std::optional<SourcePos> OperationPos(const Program& program, size_t index) {
  for (const Statement& statement : program.statements) {
    if (!std::holds_alternative<Operation>(statement.node)) continue;
    if (index-- == 0) return statement.pos;
  }
  return std::nullopt;
}

// Where the program first names %name.
std::optional<SourcePos> NamePos(const Program& program,
                                 absl::string_view name) {
  for (const Statement& statement : program.statements) {
    if (const auto* op = std::get_if<Operation>(&statement.node)) {
      // In the order the text shows them: the two `%dst = ` forms start with
      // dst, the DPS form ends with it.
      std::vector<const ValueRef*> operands = Sources(*op);
      if (op->tmp) operands.push_back(&*op->tmp);
      operands.insert(
          op->form == Form::kDps ? operands.end() : operands.begin(), &op->dst);
      for (const ValueRef* operand : operands) {
        if (operand->name == name) return operand->pos;
      }
    } else if (const auto* binding = std::get_if<Binding>(&statement.node)) {
      if (binding->tile == name) return binding->tile_pos;
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<JobSpec> Lower(const Program& program, JobSpec base,
                              const Engine& engine) {
  return Lowerer(program, std::move(base), engine).Run();
}

absl::Status Locate(const Program& program, const absl::Status& status) {
  const ErrorSite site = SiteOf(status);
  std::optional<SourcePos> pos;
  if (site.instruction) {
    pos = OperationPos(program, *site.instruction);
  } else if (site.tile) {
    pos = NamePos(program, *site.tile);
  }
  return pos ? Prefixed(*pos, status) : status;
}

}  // namespace pasm
}  // namespace ptoserve
