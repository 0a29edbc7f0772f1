"""Recipe panel: the preset, the op-type / name-pattern rules with add and remove, and the node overrides
(the inspector's edits, the units the recipe choice or the latency check kept float, the exclude list).

Precedence (shown in the panel): preset < op-type rules < name-glob rules < node overrides.
Every change is an undoable command.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.api import PRESETS, RECIPE_DTYPES, NodeSettings, Rule, unapplied_choice
from workbench.core.wording import count
from workbench.qt import commands
from workbench.qt.dialogs import guarded
from workbench.qt.field_guard import guard_fields
from workbench.qt.latency_edits import latency_kept_recorded
from workbench.qt.quant_banner import RECIPE_OFF_NOTE
from workbench.qt.quantize_anyway import after_each_step, latency_kept_units
from workbench.qt.theme import mute

INHERIT = "(inherit)"


def _role_changes(settings) -> list[str]:
    """``role: key=value, ...`` for each role a rule or an override sets (activation, weight, bias)."""
    parts = []
    for role in ("activation", "weight", "bias"):
        part = getattr(settings, role)
        if part is not None:
            changes = part.model_dump(exclude_unset=True)
            parts.append(f"{role}: " + ", ".join(f"{k}={getattr(v, 'value', v)}" for k, v in changes.items()))
    return parts


def rule_text(rule: Rule) -> str:
    """One line describing ``rule``: what it matches and what it sets."""
    parts = _role_changes(rule)
    if rule.exclude is not None:
        parts.append("exclude" if rule.exclude else "include")
    return f"{rule.label}  ->  " + ("; ".join(parts) or "(no change)")


#: what an override line says of a unit a latency check of this session kept float (:func:`override_text`)
BY_LATENCY = "kept float (latency check: slower quantized on this machine)"
#: ... and of one an opened, restored or applied project's ``latency_kept`` keeps float: measured when that project
#: was saved, maybe on another machine
BY_RECORD = "kept float (latency check: slower quantized when the project was saved)"


def override_text(node: str, settings: NodeSettings, latency: bool = False, recorded: bool = False) -> str:
    """One line for a node override: ``Conv_3  ->  kept float`` or ``Conv_3  ->  activation: dtype=int16``;
    ``latency``: the latency check kept it float (:data:`BY_LATENCY`), not the user; ``recorded``: as a
    project's record says (:data:`BY_RECORD`), not measured in this session."""
    parts = _role_changes(settings)
    by_latency = BY_RECORD if recorded else BY_LATENCY
    if settings.exclude is not None:
        parts.insert(0, (by_latency if latency else "kept float") if settings.exclude else "quantized (exclude off)")
    return f"{node}  ->  " + ("; ".join(parts) or "(no change)")


class RecipePanel(QWidget):
    """The preset, its rules (add / remove) and the node overrides (the inspector's edits, the recipe choice's
    and the latency check's units kept float); a click on an override emits ``nodeClicked(node)``."""

    nodeClicked = Signal(str)

    def __init__(self, document, parent: QWidget | None = None):
        super().__init__(parent)
        self.doc = document
        self._updating = False
        outer = QVBoxLayout(self)
        self.note = QLabel(RECIPE_OFF_NOTE)  # shown instead of the controls for an already-quantized model
        self.note.setWordWrap(True)
        mute(self.note)
        self.note.setVisible(False)
        outer.addWidget(self.note)
        self.controls = QWidget()
        outer.addWidget(self.controls, 1)
        lay = QVBoxLayout(self.controls)
        lay.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("Preset"))
        self.preset = QComboBox()
        for name, preset in PRESETS.items():
            self.preset.addItem(name)
            self.preset.setItemData(self.preset.count() - 1, preset.description, Qt.ItemDataRole.ToolTipRole)
        row.addWidget(self.preset, 1)
        lay.addLayout(row)
        self.description = QLabel()
        self.description.setWordWrap(True)
        mute(self.description)
        lay.addWidget(self.description)
        self.rules_caption = QLabel("Rules (later rules win; name rules beat op-type rules; node overrides beat both):")
        self.rules_caption.setWordWrap(True)  # one long line set the panel's minimum width (a sideways scrollbar)
        lay.addWidget(self.rules_caption)
        self.rules = QListWidget()
        lay.addWidget(self.rules, 1)
        self.remove = QPushButton("Remove rule")
        lay.addWidget(self.remove)
        self.overrides_caption = QLabel()
        self.overrides_caption.setWordWrap(True)
        lay.addWidget(self.overrides_caption)
        self.overrides = QListWidget()  # node -> setting; the inspector edits them
        self.overrides.setToolTip("Click one to select its node; the inspector edits or resets it.")
        lay.addWidget(self.overrides, 1)
        self.overrides.itemClicked.connect(lambda item: self.nodeClicked.emit(item.data(Qt.ItemDataRole.UserRole)))
        lay.addWidget(self._add_box())
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        lay.addWidget(self.summary)
        self.preset.currentTextChanged.connect(self._on_preset)
        self.remove.clicked.connect(self._on_remove)
        document.recipeChanged.connect(self.refresh)
        # an edit's command is on the stack (latency_kept_units reads it) only once its redo, which changed the
        # recipe, returned: the latency check's units are said to be its from then
        after_each_step(document, self.refresh)
        guard_fields(self)  # the wheel over a combo box scrolls, never changes the preset
        self.refresh()

    def _add_box(self) -> QGroupBox:
        box = QGroupBox("Add rule")
        grid = QGridLayout(box)
        self.kind = QComboBox()
        self.kind.addItems(["op_type", "name"])
        self.key = QLineEdit()
        self.key.setPlaceholderText("Conv  or  blk.*")
        self.act_dtype = QComboBox()
        self.act_dtype.addItems([INHERIT, *RECIPE_DTYPES])
        self.w_dtype = QComboBox()
        self.w_dtype.addItems([INHERIT, *RECIPE_DTYPES])
        self.rule_exclude = QCheckBox("exclude")
        self.add = QPushButton("Add")
        grid.addWidget(self.kind, 0, 0)
        grid.addWidget(self.key, 0, 1, 1, 2)
        grid.addWidget(QLabel("activation"), 1, 0)
        grid.addWidget(self.act_dtype, 1, 1)
        grid.addWidget(QLabel("weight"), 2, 0)
        grid.addWidget(self.w_dtype, 2, 1)
        grid.addWidget(self.rule_exclude, 3, 0)
        grid.addWidget(self.add, 3, 2)
        self.add.clicked.connect(self._on_add)
        self.key.returnPressed.connect(self._on_add)
        return box

    def _quantized(self) -> bool:
        """An already-quantized model is open: its recipe cannot be edited (nothing re-quantizes it)."""
        return self.doc.quant_summary is not None

    @guarded
    def refresh(self) -> None:
        quantized = self._quantized()
        self.note.setVisible(quantized)
        self.controls.setVisible(not quantized)
        self.controls.setEnabled(not quantized)
        recipe = self.doc.recipe
        self._updating = True
        try:
            self.preset.setCurrentText(recipe.preset)
        finally:
            self._updating = False
        preset = PRESETS.get(recipe.preset)
        self.description.setText(preset.description if preset else "")
        self._offer_activation_dtypes(preset is not None and preset.mode == "static")
        self.rules.clear()
        for rule in recipe.rules:
            self.rules.addItem(rule_text(rule))
        self.overrides.clear()
        latency = latency_kept_units(self.doc)  # this session's latency edits and the opened project's record
        recorded = latency_kept_recorded(self.doc)  # of those, the record's: measured when it was saved
        for node, settings in recipe.overrides.items():
            self.overrides.addItem(override_text(node, settings, node in latency, node in recorded))
            self.overrides.item(self.overrides.count() - 1).setData(Qt.ItemDataRole.UserRole, node)
        for pattern in recipe.exclude:  # the recipe's exclude list (a CLI --exclude): names or globs
            self.overrides.addItem(f"{pattern}  ->  kept float (exclude list)")
            self.overrides.item(self.overrides.count() - 1).setData(Qt.ItemDataRole.UserRole, pattern)
        kept = sum(1 for o in recipe.overrides.values() if o.exclude) + len(recipe.exclude)
        listed = len(recipe.overrides) + len(recipe.exclude)
        by_latency = f", {len(latency)} of them by the latency check" if latency else ""
        self.overrides_caption.setText(
            f"Node overrides ({count(listed, 'node')}, {kept} kept float{by_latency}; click one to select it):"
            if listed else "Node overrides: none (select nodes and set them in the inspector).")
        plan = self.doc.plan
        if plan is not None:
            active = plan.quantized_count()[0]
            errors = sum(1 for i in plan.issues if i.severity == "error")
            self.summary.setText(f"{count(active, 'node unit')} quantized, "
                                 f"{count(len(plan.activations), 'activation tensor')} to calibrate, "
                                 f"{count(len(plan.issues), 'issue')} ({count(errors, 'error')}), mode {plan.mode}.")
        elif self.doc.plan_error:
            self.summary.setText(f"<span style='color:#c62828'>{self.doc.plan_error}</span>")
        else:
            self.summary.setText("")

    def _offer_activation_dtypes(self, static: bool) -> None:
        """Grey the new rule's activation dtypes a ``static`` preset would not apply as written (MX formats:
        :func:`~workbench.core.api.unapplied_choice`), the reason in the item's tooltip."""
        model = self.act_dtype.model()
        for i in range(self.act_dtype.count()):
            why = unapplied_choice("activation", "dtype", self.act_dtype.itemText(i), static=static,
                                   granularities=[], observers=[])
            model.item(i).setEnabled(why is None)
            self.act_dtype.setItemData(i, f"Not offered: {why}." if why else None, Qt.ItemDataRole.ToolTipRole)
        if not model.item(self.act_dtype.currentIndex()).isEnabled():
            self.act_dtype.setCurrentIndex(0)  # the preset changed to a static one: inherit

    @guarded
    def _on_preset(self, name: str) -> None:
        if self._updating or not name or name == self.doc.recipe.preset or self._quantized():
            return
        commands.push_edit(self.doc, commands.set_preset(self.doc.recipe, name), f"Preset {name}")

    @guarded
    def _on_add(self, *_args) -> None:
        key = self.key.text().strip()
        if self._quantized():
            return
        if not key:
            self.summary.setText("<span style='color:#c62828'>Type an op type (e.g. Conv) or a name glob "
                                 "(e.g. blk.*) first.</span>")
            return
        act = self.act_dtype.currentText()
        w = self.w_dtype.currentText()
        rule = commands.make_rule(self.kind.currentText(), key,
                                  activation_dtype=None if act == INHERIT else act,
                                  weight_dtype=None if w == INHERIT else w,
                                  exclude=True if self.rule_exclude.isChecked() else None)
        commands.push_edit(self.doc, commands.add_rule(self.doc.recipe, rule), f"Add {rule.label}")
        self.key.clear()

    @guarded
    def _on_remove(self, *_args) -> None:
        row = self.rules.currentRow()
        if self._quantized() or row < 0 or row >= len(self.doc.recipe.rules):
            return
        label = self.doc.recipe.rules[row].label
        commands.push_edit(self.doc, commands.remove_rule(self.doc.recipe, row), f"Remove {label}")
