//! The training loop: epochs of forward, loss, backward, weight-gradient sum and Adam step,
//! then an evaluation pass; timings split into compute, exchange (forward and backward) and
//! weight synchronisation.

use std::time::{Duration, Instant};

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

use crate::exchange::Exchange;
use crate::gnn::{correct, cross_entropy, Adam, Input, Model, ModelKind, RowScales};
use crate::{InputError, TrainError};

/// What to train and how. `Default` is the standard recipe of Kipf and Welling: 2 layers, 16
/// hidden units, dropout 0.5, Adam at 0.01, weight decay 5e-4 on the first layer, 200 epochs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recipe {
    /// GCN or SAGE.
    pub model: ModelKind,
    /// Layers (at least 1).
    pub layers: usize,
    /// Hidden units per hidden layer.
    pub hidden: usize,
    /// Epochs.
    pub epochs: usize,
    /// Adam's learning rate.
    pub lr: f32,
    /// Dropout probability on every layer's input.
    pub dropout: f32,
    /// L2 weight decay on the first layer's weights (as Kipf and Welling).
    pub weight_decay: f32,
    /// Seed of the weights and of dropout.
    pub seed: u64,
}

impl Default for Recipe {
    fn default() -> Recipe {
        Recipe {
            model: ModelKind::Gcn,
            layers: 2,
            hidden: 16,
            epochs: 200,
            lr: 0.01,
            dropout: 0.5,
            weight_decay: 5e-4,
            seed: 1,
        }
    }
}

/// Sums across workers (the weight gradients, the loss, the accuracy counts). One process:
/// [`Alone`].
pub trait Collective {
    /// Replaces `v` by its element-wise sum over all workers.
    fn all_reduce_sum(&mut self, v: &mut [f64]) -> Result<(), TrainError>;
}

/// One worker: sums are the values themselves.
pub struct Alone;

impl Collective for Alone {
    fn all_reduce_sum(&mut self, _v: &mut [f64]) -> Result<(), TrainError> {
        Ok(())
    }
}

/// One worker's rows.
pub struct Local<'a> {
    /// `rows x dim` features.
    pub features: Input<'a>,
    /// Label per row.
    pub labels: &'a [i64],
    /// Split masks per row.
    pub train: &'a [bool],
    /// Validation rows.
    pub val: &'a [bool],
    /// Test rows.
    pub test: &'a [bool],
    /// Degree scales per row.
    pub scales: RowScales,
    /// Classes.
    pub classes: usize,
}

/// One epoch's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EpochStat {
    /// Epoch, from 1.
    pub epoch: usize,
    /// Training loss (cross-entropy plus weight decay), before the step.
    pub loss: f64,
    /// Accuracies after the step.
    pub train_acc: f64,
    /// Validation accuracy.
    pub val_acc: f64,
    /// Test accuracy.
    pub test_acc: f64,
    /// Seconds since training started, at the end of the epoch.
    pub wall_s: f64,
    /// Milliseconds of the epoch.
    pub epoch_ms: f64,
    /// Milliseconds of computation (everything but exchanges and weight sync).
    pub compute_ms: f64,
    /// Milliseconds in forward exchanges (training and evaluation passes).
    pub exchange_fwd_ms: f64,
    /// Milliseconds in backward exchanges.
    pub exchange_bwd_ms: f64,
    /// Milliseconds summing weight gradients across workers.
    pub weight_sync_ms: f64,
}

/// The outcome of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    /// Every epoch.
    pub epochs: Vec<EpochStat>,
    /// The epoch with the best validation accuracy (the first of equals).
    pub best_epoch: usize,
    /// Test accuracy at that epoch (the reported one).
    pub test_accuracy: f64,
    /// Validation accuracy at that epoch.
    pub val_accuracy: f64,
    /// Test accuracy after the last epoch.
    pub final_test_accuracy: f64,
    /// Parameters of the model.
    pub parameters: usize,
}

struct Timed<'a> {
    inner: &'a mut dyn Exchange,
    fwd: Duration,
    bwd: Duration,
}

impl Exchange for Timed<'_> {
    fn neighbour_sum(
        &mut self,
        layer: u32,
        backward: bool,
        x: ArrayView2<f32>,
    ) -> Result<Array2<f32>, TrainError> {
        let t = Instant::now();
        let r = self.inner.neighbour_sum(layer, backward, x);
        if backward {
            self.bwd += t.elapsed();
        } else {
            self.fwd += t.elapsed();
        }
        r
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Trains `recipe` on `local`'s rows; `on_epoch` sees every epoch as it ends.
pub fn train(
    local: &Local,
    recipe: &Recipe,
    ex: &mut dyn Exchange,
    coll: &mut dyn Collective,
    on_epoch: &mut dyn FnMut(&EpochStat),
) -> Result<Outcome, TrainError> {
    if recipe.layers == 0 || recipe.hidden == 0 || recipe.epochs == 0 {
        return Err(InputError::ZeroSize.into());
    }
    if !(0.0..1.0).contains(&recipe.dropout) {
        return Err(InputError::Dropout {
            dropout: recipe.dropout,
        }
        .into());
    }
    let mut dims = vec![local.features.cols()];
    dims.extend(std::iter::repeat_n(recipe.hidden, recipe.layers - 1));
    dims.push(local.classes);
    let mut model = Model::new(recipe.model, &dims, recipe.seed);
    let mut adam = Adam::new(&model, recipe.lr);
    // The global number of training vertices (the loss is their mean).
    let mut count = [local.train.iter().filter(|&&b| b).count() as f64];
    coll.all_reduce_sum(&mut count)?;
    let n_train = count[0] as usize;
    if n_train == 0 {
        return Err(InputError::NoTrainingVertex.into());
    }
    let mut ex = Timed {
        inner: ex,
        fwd: Duration::ZERO,
        bwd: Duration::ZERO,
    };
    let start = Instant::now();
    let mut epochs = Vec::with_capacity(recipe.epochs);
    let mut best = (0usize, f64::NEG_INFINITY, 0.0f64);
    for epoch in 1..=recipe.epochs {
        let t0 = Instant::now();
        let (f0, b0) = (ex.fwd, ex.bwd);
        let seed = recipe
            .seed
            .wrapping_mul(0x9e37_79b9)
            .wrapping_add(epoch as u64);
        let (logits, cache) = model.forward(
            local.features,
            &local.scales,
            &mut ex,
            Some((recipe.dropout, seed)),
        )?;
        let (mut loss, dlogits) = cross_entropy(&logits, local.labels, local.train, n_train);
        let mut grads = model.backward(&cache, dlogits, &local.scales, &mut ex)?;
        // Sum the gradients (and the loss) over the workers.
        let ts = Instant::now();
        let mut flat: Vec<f64> = Vec::with_capacity(model.num_params() + 1);
        for l in grads.layers.iter_mut() {
            for p in l.params_mut() {
                flat.extend(p.iter().map(|&x| x as f64));
            }
        }
        flat.push(loss);
        coll.all_reduce_sum(&mut flat)?;
        loss = flat.pop().expect("pushed above");
        let mut it = flat.into_iter();
        for l in grads.layers.iter_mut() {
            for p in l.params_mut() {
                for x in p.iter_mut() {
                    *x = it.next().expect("same shapes") as f32;
                }
            }
        }
        let sync = ts.elapsed();
        // Weight decay on the first layer (identical on every worker, so added after the sum).
        let w0 = &model.layers[0].w;
        loss += 0.5 * recipe.weight_decay as f64 * w0.iter().map(|&x| (x * x) as f64).sum::<f64>();
        grads.layers[0].w.scaled_add(recipe.weight_decay, w0);
        adam.step(&mut model, &mut grads);
        // Evaluation pass.
        let (logits, _) = model.forward(local.features, &local.scales, &mut ex, None)?;
        let mut counts = [0f64; 6];
        for (i, m) in [local.train, local.val, local.test].into_iter().enumerate() {
            let (ok, n) = correct(&logits, local.labels, m);
            counts[2 * i] = ok as f64;
            counts[2 * i + 1] = n as f64;
        }
        let ts2 = Instant::now();
        coll.all_reduce_sum(&mut counts)?;
        let sync = sync + ts2.elapsed();
        let acc = |i: usize| counts[2 * i] / counts[2 * i + 1].max(1.0);
        let total = t0.elapsed();
        let (fwd, bwd) = (ex.fwd - f0, ex.bwd - b0);
        let stat = EpochStat {
            epoch,
            loss,
            train_acc: acc(0),
            val_acc: acc(1),
            test_acc: acc(2),
            wall_s: start.elapsed().as_secs_f64(),
            epoch_ms: ms(total),
            compute_ms: ms(total.saturating_sub(fwd + bwd + sync)),
            exchange_fwd_ms: ms(fwd),
            exchange_bwd_ms: ms(bwd),
            weight_sync_ms: ms(sync),
        };
        if stat.val_acc > best.1 {
            best = (epoch, stat.val_acc, stat.test_acc);
        }
        on_epoch(&stat);
        epochs.push(stat);
    }
    let last = epochs.last().expect("at least one epoch");
    Ok(Outcome {
        final_test_accuracy: last.test_acc,
        best_epoch: best.0,
        val_accuracy: best.1,
        test_accuracy: best.2,
        parameters: model.num_params(),
        epochs,
    })
}
