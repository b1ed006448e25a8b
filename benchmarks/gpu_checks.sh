#!/usr/bin/env bash
# Every CUDA test and GPU benchmark of the project, then the whole test suite, on a machine with a CUDA GPU.
#
#   bash benchmarks/gpu_checks.sh [OUT_DIR]
#
# Run it from the repository root in an environment that has the project's dependencies (e.g.
# `uv run --frozen --all-extras bash benchmarks/gpu_checks.sh`). Each step has its own time limit and
# writes its log to OUT_DIR (default: gpu-checks/); a failed step does not stop the later ones.
# GPU_CHECKS_STEPS picks steps (default: all, in order); GPU_CHECKS_PYTEST_ARGS adds arguments to the
# whole-suite step (e.g. --ignore of modules whose extras are not installed). PYTHON names the interpreter.
# The figures it printed on an H200 are in docs/benchmarks.md.
set -u
out=${1:-gpu-checks}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 FIFTYONE_DO_NOT_TRACK=true HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
py=${PYTHON:-python}
steps=" ${GPU_CHECKS_STEPS:-cuda_tests bench_predict bench_scoring bench_bootstrap bench_lca bench_ood_metrics bench_perturbations bench_zero_shot suite} "

step() {  # step NAME SECONDS COMMAND...
    local name=$1 limit=$2
    shift 2
    [[ $steps == *" $name "* ]] || return 0
    echo "=== $name (limit ${limit}s): $*"
    local start=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    tail -n 40 "$out/$name.log"
    echo "=== $name: rc=$rc in $((SECONDS - start))s"
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
$py -c "import torch, torchvision, timm, pyarrow, datasets; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'timm', timm.__version__, 'pyarrow', pyarrow.__version__, 'datasets', datasets.__version__, 'cuda', torch.cuda.is_available())"

# the tests that skip without CUDA
step cuda_tests 110 $py -m pytest -q -p no:cacheprovider -o addopts= -rs \
    "tests/test_adversarial.py::test_on_cuda_flags_come_back_on_the_cpu_and_the_cuda_rng_is_left_alone" \
    "tests/test_corruptions_torch.py::test_torch_path_matches_numpy_on_gpu" \
    "tests/test_predict.py::test_nvjpeg_path_on_cuda_is_close_to_the_cpu_path" \
    "tests/test_scoring_calibration.py::test_cuda_calibration_equals_cpu" \
    "tests/test_scoring_classification.py::test_cuda_results_equal_cpu_results" \
    "tests/test_scoring_multilabel.py::test_cuda_gives_the_cpu_results" \
    "tests/test_scoring_report.py::test_cuda_report_equals_cpu_report" \
    "tests/test_adversarial.py::test_autoattack_on_cuda_is_seeded_and_leaves_the_cuda_rng_alone" \
    "tests/test_adversarial_hesse2025.py::test_on_cuda_too_the_tensors_and_accuracies_equal_theirs"
step bench_predict 170 $py benchmarks/bench_predict.py --model resnet50 --device cuda --batch-size 256 --amp \
    --images 5000 --workers 12 --rounds 2
step bench_scoring 60 $py benchmarks/bench_scoring.py --sizes 1000 --device cuda --repeat 3
step bench_bootstrap 120 $py benchmarks/bench_bootstrap.py --device cuda
step bench_lca 40 $py benchmarks/bench_lca.py --device cuda --loop-repeats 1
step bench_ood_metrics 150 $py benchmarks/bench_ood_metrics.py --device cuda
step bench_perturbations 40 $py benchmarks/bench_perturbations.py --images 16 --workers 8 --torch-device cuda
# zero-shot ViT-B/16 (random init, open_clip): head overhead vs a plain classifier; 80 templates cold vs cached
step bench_zero_shot 120 $py benchmarks/bench_zero_shot.py --arch ViT-B-16 --device cuda --batch-size 256 \
    --prompts openai80 --amp --rounds 3
# every other test too: with CUDA visible, commands default to --device cuda
# shellcheck disable=SC2086
step suite 200 $py -m pytest -q -p no:cacheprovider -o addopts= -n 14 --dist loadfile \
    --continue-on-collection-errors ${GPU_CHECKS_PYTEST_ARGS:-}
