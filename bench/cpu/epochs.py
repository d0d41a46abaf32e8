"""`bench/cpu/run.py --epochs N`: `duet train` against a plain PyTorch loop (bench/cpu/torch_epochs.py)
over N whole epochs of Fashion-MNIST. For each model it alternates fresh processes (duet train,
PyTorch on 1..M threads, duet train, ...) for --repeats rounds, takes each configuration's
median, and compares duet with PyTorch at its best thread count, as the batch mode does."""
import epoch_runs
import fashion_mnist_np
from processes import BenchError, progress
from summary import check_twins, compare


def measure_model(model, args, duet, duet_threads, test_images, torch_threads):
    """({duet train runs}, {threads: [PyTorch runs]}) of --repeats alternating rounds. PyTorch
    takes the batch size and lr that duet train reports using (its defaults for the model)."""
    duet_runs, torch_runs = [], {t: [] for t in torch_threads}
    for round_ in range(1, args.repeats + 1):
        tag = f"{model} round {round_}/{args.repeats}"
        progress(f"{tag}: duet train, {args.epochs} epoch(s)")
        run = epoch_runs.run_duet_train(duet, model, args.epochs, duet_threads, test_images, args.data_dir,
                                        args.retries)
        if run["optimizer"] != "sgd":
            raise BenchError(f"duet train's default optimizer is now {run['optimizer']}; bench/cpu/torch_epochs.py has SGD")
        duet_runs.append(run)
        progress(f"{tag}: duet train {run['train_images_per_second']:,.0f} img/s, test acc {run['test_accuracy']:.3f}")
        for threads in torch_threads:
            run = epoch_runs.run_torch_epochs(model, args.epochs, threads, duet_runs[-1], args.data_dir, args.retries)
            torch_runs[threads].append(run)
            progress(f"{tag}: PyTorch {threads} thread(s) {run['train_images_per_second']:,.0f} img/s, "
                     f"test acc {run['test_accuracy']:.3f}")
    return duet_runs, torch_runs


def summarize(model, epochs, duet_runs, torch_runs):
    """One model's row: compare's medians and ratios, with the settings both sides ran with."""
    check_twins(model, duet_runs, next(iter(torch_runs.values())), keys=("parameters",))
    first = duet_runs[0]
    return {"model": model, "epochs": epochs, "parameters": first["parameters"], "batch_size": first["batch_size"],
            "lr": first["lr"], "train_images": first["train_images"], "test_images": first["test_images"],
            **compare(duet_runs, torch_runs)}


def measure(args, duet, torch_threads):
    """(the models' summaries, the result's settings) of the whole --epochs run."""
    test_images = fashion_mnist_np.size("test", args.data_dir or fashion_mnist_np.DEFAULT_DIR)
    duet_threads = epoch_runs.duet_threads(duet)
    summaries = []
    for model in args.models:
        duet_runs, torch_runs = measure_model(model, args, duet, duet_threads, test_images, torch_threads)
        summaries.append(summarize(model, args.epochs, duet_runs, torch_runs))
    settings = {"mode": "epochs", "epochs": args.epochs, "repeats": args.repeats, "optimizer": "sgd",
                "duet_threads": duet_threads, "torch_threads": torch_threads,
                "batch_size": {s["model"]: s["batch_size"] for s in summaries},
                "lr": {s["model"]: s["lr"] for s in summaries}}
    return summaries, {"settings": settings}
